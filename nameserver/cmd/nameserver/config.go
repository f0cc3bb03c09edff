package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tidemq/tide/nameserver"
	"github.com/tidemq/tide/pkg/props"
	"github.com/tidemq/tide/pkg/remoting"
)

// config holds the daemon settings as text, the way the properties file
// and the flags give them, until options turns them into typed Options.
type config struct {
	listenPort                  string
	bindAddress                 string
	kvConfigPath                string
	scanNotActiveBrokerInterval string // milliseconds
	brokerChannelExpiredTime    string // milliseconds
	// limits and TLS (docs/security.md)
	serverChannelMaxIdleTimeSeconds string
	serverMaxConnections            string
	tlsEnable                       string
	tlsCertPath                     string
	tlsKeyPath                      string
	tlsClientCAPath                 string
	tlsMode                         string
}

// Supported property keys. RocketMQ's names are kept where they exist
// (NettyServerConfig.listenPort and bindAddress, NamesrvConfig.kvConfigPath
// and scanNotActiveBrokerInterval); brokerChannelExpiredTime is Java's
// constant BROKER_CHANNEL_EXPIRED_TIME made configurable.
var keys = map[string]func(c *config) *string{
	"listenPort":                  func(c *config) *string { return &c.listenPort },
	"bindAddress":                 func(c *config) *string { return &c.bindAddress },
	"kvConfigPath":                func(c *config) *string { return &c.kvConfigPath },
	"scanNotActiveBrokerInterval": func(c *config) *string { return &c.scanNotActiveBrokerInterval },
	"brokerChannelExpiredTime":    func(c *config) *string { return &c.brokerChannelExpiredTime },
	// Limits and TLS: RocketMQ's idle key, Tide's others (docs/security.md).
	"serverChannelMaxIdleTimeSeconds": func(c *config) *string { return &c.serverChannelMaxIdleTimeSeconds },
	"serverMaxConnections":            func(c *config) *string { return &c.serverMaxConnections },
	"tlsEnable":                       func(c *config) *string { return &c.tlsEnable },
	"tlsCertPath":                     func(c *config) *string { return &c.tlsCertPath },
	"tlsKeyPath":                      func(c *config) *string { return &c.tlsKeyPath },
	"tlsClientCAPath":                 func(c *config) *string { return &c.tlsClientCAPath },
	// RocketMQ's tls.server.mode (a JVM system property there), also as tlsMode.
	"tlsMode":         func(c *config) *string { return &c.tlsMode },
	"tls.server.mode": func(c *config) *string { return &c.tlsMode },
}

// defaultConfig mirrors nameserver.DefaultOptions, plus Java's default KV
// file location ($HOME/namesrv/kvConfig.json).
func defaultConfig() config {
	d := nameserver.DefaultOptions()
	host, port, _ := net.SplitHostPort(d.ListenAddr)
	c := config{
		listenPort:                  port,
		bindAddress:                 host,
		scanNotActiveBrokerInterval: strconv.FormatInt(d.ScanInterval.Milliseconds(), 10),
		brokerChannelExpiredTime:    strconv.FormatInt(d.BrokerExpiry.Milliseconds(), 10),
	}
	if home, err := os.UserHomeDir(); err == nil {
		c.kvConfigPath = filepath.Join(home, "namesrv", "kvConfig.json")
	}
	return c
}

// load applies a properties file. An unknown key is an error naming the
// file and line.
func (c *config) load(path string) error {
	entries, err := props.ParseFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	for _, e := range entries {
		field, ok := keys[e.Key]
		if !ok {
			return fmt.Errorf("config %s:%d: unknown key %q", path, e.Line, e.Key)
		}
		*field(c) = e.Value
	}
	return nil
}

// options validates the settings and builds Options.
func (c *config) options(logger *slog.Logger) (nameserver.Options, error) {
	o := nameserver.DefaultOptions()
	port, err := parsePort(c.listenPort)
	if err != nil {
		return o, err
	}
	o.ListenAddr = net.JoinHostPort(c.bindAddress, strconv.Itoa(port))
	o.KVConfigPath = c.kvConfigPath
	if o.ScanInterval, err = millis("scanNotActiveBrokerInterval", c.scanNotActiveBrokerInterval); err != nil {
		return o, err
	}
	if o.BrokerExpiry, err = millis("brokerChannelExpiredTime", c.brokerChannelExpiredTime); err != nil {
		return o, err
	}
	if err := c.security(&o); err != nil {
		return o, err
	}
	o.Logger = logger
	if err := o.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

func millis(key, v string) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > int64(24*time.Hour/time.Millisecond) {
		return 0, fmt.Errorf("bad %s %q: want milliseconds in 1..86400000", key, v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// security applies the limit and TLS keys.
func (c *config) security(o *nameserver.Options) error {
	if c.serverChannelMaxIdleTimeSeconds != "" {
		n, err := strconv.Atoi(c.serverChannelMaxIdleTimeSeconds)
		if err != nil || n < 0 {
			return fmt.Errorf("bad serverChannelMaxIdleTimeSeconds %q: want seconds >= 0", c.serverChannelMaxIdleTimeSeconds)
		}
		o.IdleTimeout = time.Duration(n) * time.Second
	}
	if c.serverMaxConnections != "" {
		n, err := strconv.Atoi(c.serverMaxConnections)
		if err != nil || n < 0 {
			return fmt.Errorf("bad serverMaxConnections %q: want a count >= 0", c.serverMaxConnections)
		}
		o.MaxConnections = n
	}
	if c.tlsMode != "" {
		m, err := remoting.ParseTLSMode(c.tlsMode)
		if err != nil {
			return fmt.Errorf("bad tlsMode %q: want disabled, permissive or enforcing", c.tlsMode)
		}
		o.TLSMode = m
		if m != remoting.TLSDisabled && c.tlsCertPath != "" && c.tlsKeyPath != "" {
			if o.TLSConfig, err = remoting.ServerTLSFiles(c.tlsCertPath, c.tlsKeyPath, c.tlsClientCAPath); err != nil {
				return err
			}
		}
	}
	if c.tlsEnable == "" {
		return nil
	}
	on, err := strconv.ParseBool(c.tlsEnable)
	if err != nil {
		return fmt.Errorf("bad tlsEnable %q: want true or false", c.tlsEnable)
	}
	if on {
		if c.tlsCertPath == "" || c.tlsKeyPath == "" {
			return fmt.Errorf("tlsEnable needs tlsCertPath and tlsKeyPath")
		}
		if o.TLSConfig, err = remoting.ServerTLSFiles(c.tlsCertPath, c.tlsKeyPath, c.tlsClientCAPath); err != nil {
			return err
		}
	}
	return nil
}
