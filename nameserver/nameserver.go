package nameserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/tidemq/tide/nameserver/internal/kvconfig"
	"github.com/tidemq/tide/nameserver/internal/processor"
	"github.com/tidemq/tide/nameserver/internal/routeinfo"
	"github.com/tidemq/tide/pkg/remoting"
)

// Sentinel errors.
var (
	// ErrInvalidOptions: Options.Validate rejected a field.
	ErrInvalidOptions = errors.New("nameserver: invalid options")
	// ErrState: Start was called twice, or after Shutdown.
	ErrState = errors.New("nameserver: wrong state")
)

// NameServer is the daemon. Its methods are safe for concurrent use.
type NameServer struct {
	opts   Options
	log    *slog.Logger
	routes *routeinfo.Table
	kv     *kvconfig.Store
	srv    *remoting.Server
	// metrics is always built; it is served only with MetricsListenAddr.
	metrics *metrics

	mu       sync.Mutex
	started  bool
	stopped  bool
	ln       net.Listener
	stop     chan struct{}
	wg       sync.WaitGroup
	serveErr error

	metricsSrv *http.Server
	metricsLn  net.Listener
}

// New validates opts and builds a NameServer, loading the KV
// configuration file if one is configured. It does not listen yet.
func New(opts Options) (*NameServer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	mode := opts.tlsMode()
	if mode == remoting.TLSPermissive && opts.TLSConfig == nil {
		host, _, _ := net.SplitHostPort(opts.ListenAddr)
		cfg, err := remoting.SelfSignedTLS(host)
		if err != nil {
			return nil, fmt.Errorf("nameserver: %w", err)
		}
		opts.TLSConfig = cfg
		opts.Logger.Info("TLS mode permissive without a certificate: TLS clients get a self-signed certificate generated at start (they can encrypt, not authenticate the NameServer)")
	}
	kv, err := kvconfig.Open(opts.KVConfigPath)
	if err != nil {
		return nil, fmt.Errorf("nameserver: %w", err)
	}
	ns := &NameServer{
		opts: opts,
		log:  opts.Logger,
		routes: routeinfo.New(routeinfo.Options{
			Now:          opts.Now,
			BrokerExpiry: opts.BrokerExpiry,
			Logger:       opts.Logger,
		}),
		kv: kv,
		srv: remoting.NewServer(remoting.ServerOptions{MaxFrameSize: opts.MaxFrameSize, Logger: opts.Logger,
			MaxConnections: opts.MaxConnections, IdleTimeout: opts.IdleTimeout, TLSConfig: opts.TLSConfig, TLSMode: mode}),
		stop: make(chan struct{}),
	}
	ns.metrics = newMetrics(ns)
	processor.New(ns.routes, kv, opts.Logger).Register(ns.srv, ns.metrics.instrument)
	return ns, nil
}

// Start listens on Options.ListenAddr and serves in background goroutines
// until Shutdown. It returns once the listener is open, so requests sent
// after it returns are served; a listen failure (port in use, bad address)
// is returned. ctx bounds only the start itself.
func (ns *NameServer) Start(ctx context.Context) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.started || ns.stopped {
		return fmt.Errorf("%w: already started or shut down", ErrState)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", ns.opts.ListenAddr)
	if err != nil {
		return fmt.Errorf("nameserver: listen: %w", err)
	}
	if err := ns.serveMetrics(ctx); err != nil {
		ln.Close()
		return fmt.Errorf("nameserver: metrics listen: %w", err)
	}
	ns.ln = ln
	ns.started = true
	ns.wg.Add(2)
	go func() {
		defer ns.wg.Done()
		err := ns.srv.Serve(ln)
		ns.mu.Lock()
		defer ns.mu.Unlock()
		// A Shutdown racing with the start of Serve makes it return
		// ErrClosed: that is a normal stop.
		if err != nil && !(ns.stopped && errors.Is(err, remoting.ErrClosed)) {
			ns.log.Error("nameserver: serve failed", "err", err)
			ns.serveErr = err
		}
	}()
	go func() {
		defer ns.wg.Done()
		ns.scanLoop()
	}()
	ns.log.Info("nameserver started", "addr", ln.Addr().String(), "kvConfigPath", ns.opts.KVConfigPath,
		"scanInterval", ns.opts.ScanInterval, "brokerExpiry", ns.opts.BrokerExpiry)
	return nil
}

// scanLoop expires silent brokers every ScanInterval and closes the
// connections they registered on, unless another live broker still uses
// that connection.
func (ns *NameServer) scanLoop() {
	t := time.NewTicker(ns.opts.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-ns.stop:
			return
		case <-t.C:
		}
		expired := ns.routes.Expire()
		ns.metrics.expired.Add(float64(len(expired)))
		if len(expired) == 0 {
			continue
		}
		inUse := map[uint64]bool{}
		for _, lb := range ns.routes.LiveBrokers() {
			inUse[lb.ConnID] = true
		}
		closeIDs := map[uint64]bool{}
		for _, e := range expired {
			if e.ConnID != 0 && !inUse[e.ConnID] {
				closeIDs[e.ConnID] = true
			}
		}
		for _, c := range ns.srv.Conns() {
			if closeIDs[c.ID()] {
				ns.log.Info("closing connection of expired broker", "remote", c.RemoteAddr())
				c.Close()
			}
		}
	}
}

// Addr returns the address being listened on (with the real port when
// ListenAddr had port 0), or "" before Start.
func (ns *NameServer) Addr() string {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.ln == nil {
		return ""
	}
	return ns.ln.Addr().String()
}

// Shutdown stops accepting connections, lets running requests finish
// (bounded by ctx), closes every connection and stops the expiry scan. It
// returns ctx's error if the bound was hit, or the error that stopped
// serving early. The KV configuration needs no flush: every change was
// written when it was made. Shutdown may be called more than once, and
// before Start.
func (ns *NameServer) Shutdown(ctx context.Context) error {
	ns.mu.Lock()
	if ns.stopped {
		ns.mu.Unlock()
		return nil
	}
	ns.stopped = true
	started := ns.started
	close(ns.stop)
	ns.mu.Unlock()
	if !started {
		return nil
	}
	err := ns.srv.Shutdown(ctx)
	if ns.metricsSrv != nil {
		if merr := ns.metricsSrv.Shutdown(ctx); merr != nil && err == nil {
			err = merr
		}
	}
	ns.wg.Wait()
	ns.log.Info("nameserver stopped")
	if err != nil {
		return fmt.Errorf("nameserver: %w", err)
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.serveErr
}
