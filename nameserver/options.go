package nameserver

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/tidemq/tide/nameserver/internal/routeinfo"
	"github.com/tidemq/tide/pkg/remoting"
)

// tlsMode is the mode the port runs (see Options.TLSMode).
func (o Options) tlsMode() remoting.TLSMode {
	switch {
	case o.TLSMode != "":
		return o.TLSMode
	case o.TLSConfig != nil:
		return remoting.TLSEnforcing
	}
	return remoting.TLSPermissive
}

// Defaults, in one place.
const (
	DefaultListenAddr   = "0.0.0.0:9876"
	DefaultScanInterval = 10 * time.Second
	DefaultBrokerExpiry = routeinfo.DefaultBrokerExpiry
	DefaultIdleTimeout  = 120 * time.Second
)

// Options configures a NameServer. Start from DefaultOptions.
type Options struct {
	// ListenAddr is the TCP host:port to listen on; port 0 picks a free
	// port (see NameServer.Addr).
	ListenAddr string
	// KVConfigPath is the JSON file that persists the KV configuration
	// (PUT_KV_CONFIG). Empty keeps it in memory only.
	KVConfigPath string
	// ScanInterval is the period of the scan that removes silent brokers.
	ScanInterval time.Duration
	// BrokerExpiry is how long a broker address may go without
	// registering before the scan removes it.
	BrokerExpiry time.Duration
	// MaxFrameSize bounds incoming frames; 0 takes the transport default
	// (16 MiB, as RocketMQ).
	MaxFrameSize int
	// MetricsListenAddr, when set, is the host:port serving Prometheus
	// /metrics and /healthz over HTTP (port 0 picks a free port, see
	// NameServer.MetricsAddr). Empty serves no metrics.
	MetricsListenAddr string
	// MaxConnections bounds open client connections (0: no bound); more
	// are closed on accept.
	MaxConnections int
	// IdleTimeout closes a connection silent for that long (RocketMQ's
	// serverChannelMaxIdleTimeSeconds, 120 s by default; 0 disables).
	IdleTimeout time.Duration
	// TLSConfig is the port's TLS configuration.
	TLSConfig *tls.Config
	// TLSMode is RocketMQ's tls.server.mode: disabled (plain only),
	// permissive (plain and TLS clients on the port) or enforcing (TLS
	// only). Zero: enforcing with a TLSConfig (TLS only, its meaning before
	// TLSMode existed), else permissive. Permissive without a TLSConfig
	// serves TLS clients a self-signed certificate made by New; enforcing
	// needs a TLSConfig.
	TLSMode remoting.TLSMode
	// Logger receives the daemon's events; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock used for broker liveness; nil means time.Now.
	// Tests inject a fake clock.
	Now func() time.Time
}

// DefaultOptions returns the defaults: port 9876 on every interface, no KV
// persistence, a scan every 10 s expiring brokers silent for 120 s.
func DefaultOptions() Options {
	return Options{
		ListenAddr:   DefaultListenAddr,
		ScanInterval: DefaultScanInterval,
		BrokerExpiry: DefaultBrokerExpiry,
		IdleTimeout:  DefaultIdleTimeout,
	}
}

// Validate reports the first invalid field, wrapping ErrInvalidOptions.
func (o Options) Validate() error {
	host, port, err := net.SplitHostPort(o.ListenAddr)
	if err != nil {
		return fmt.Errorf("%w: listen address %q: %v", ErrInvalidOptions, o.ListenAddr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%w: listen address %q: bad port %q", ErrInvalidOptions, o.ListenAddr, port)
	}
	if host != "" && net.ParseIP(host) == nil && !validHostname(host) {
		return fmt.Errorf("%w: listen address %q: bad host %q", ErrInvalidOptions, o.ListenAddr, host)
	}
	switch {
	case o.ScanInterval <= 0:
		return fmt.Errorf("%w: scan interval %v must be positive", ErrInvalidOptions, o.ScanInterval)
	case o.BrokerExpiry <= 0:
		return fmt.Errorf("%w: broker expiry %v must be positive", ErrInvalidOptions, o.BrokerExpiry)
	case o.MaxFrameSize < 0:
		return fmt.Errorf("%w: max frame size %d < 0", ErrInvalidOptions, o.MaxFrameSize)
	case o.MaxConnections < 0 || o.IdleTimeout < 0:
		return fmt.Errorf("%w: max connections %d / idle timeout %v < 0", ErrInvalidOptions, o.MaxConnections, o.IdleTimeout)
	case o.TLSMode != "" && o.TLSMode != remoting.TLSDisabled && o.TLSMode != remoting.TLSPermissive && o.TLSMode != remoting.TLSEnforcing:
		return fmt.Errorf("%w: TLS mode %q: want disabled, permissive or enforcing", ErrInvalidOptions, o.TLSMode)
	case o.TLSMode == remoting.TLSEnforcing && o.TLSConfig == nil:
		return fmt.Errorf("%w: TLS mode enforcing needs a TLS configuration (tlsCertPath, tlsKeyPath)", ErrInvalidOptions)
	}
	return nil
}

func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
