package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Server accepts connections and serves requests by code. Register
// handlers (Handle, HandleFunc) and hooks (OnConnect, OnDisconnect) before
// Serve; registering later is safe but races with requests already
// arriving. All methods are safe for concurrent use.
type Server struct {
	opts ServerOptions
	log  *slog.Logger
	err  error // from opts.Validate, returned by Serve
	mux  mux
	cfg  connConfig

	opaque atomic.Int32 // opaques of server-initiated requests
	limit  *limiter

	mu           sync.Mutex
	listeners    map[net.Listener]struct{}
	conns        map[*Conn]struct{}
	onConnect    []func(*Conn)
	onDisconnect []func(*Conn)
	shutdown     bool
	refused      uint64         // connections refused by MaxConnections
	connWG       sync.WaitGroup // per-connection goroutines; Add under mu while !shutdown
}

// NewServer returns a server configured by opts (zero fields take their
// defaults). Invalid options make Serve fail.
func NewServer(opts ServerOptions) *Server {
	err := opts.Validate()
	opts = opts.withDefaults()
	s := &Server{
		opts:      opts,
		log:       opts.Logger,
		err:       err,
		limit:     newLimiter(opts.MaxConcurrentRequests),
		listeners: map[net.Listener]struct{}{},
		conns:     map[*Conn]struct{}{},
	}
	s.cfg = connConfig{
		log:          opts.Logger,
		maxFrame:     opts.MaxFrameSize,
		maxHeader:    opts.MaxHeaderSize,
		frameTimeout: max(opts.FrameReadTimeout, 0),
		intercept:    opts.Interceptor,
		idleTimeout:  opts.IdleTimeout,
		writeTimeout: opts.WriteTimeout,
		lookup:       s.mux.lookup,
		server:       true,
		opaque:       &s.opaque,
		limit:        s.limit,
		perConnMax:   int32(min(opts.MaxConcurrentRequestsPerConn, 1<<30)),
	}
	return s
}

// Handle registers h for request code; a nil h removes the registration.
// Requests with an unregistered code are answered REQUEST_CODE_NOT_SUPPORTED.
func (s *Server) Handle(code int16, h Handler) { s.mux.handle(code, h) }

// HandleFunc registers f for request code.
func (s *Server) HandleFunc(code int16, f HandlerFunc) { s.mux.handle(code, f) }

// Codes returns the request codes with a registered handler, in
// ascending order (so a daemon can check that every code it serves has,
// e.g., an access rule).
func (s *Server) Codes() []int16 { return s.mux.codes() }

// OnConnect adds a hook run for each new connection before its first
// request is read, in the connection's reader goroutine.
func (s *Server) OnConnect(f func(*Conn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onConnect = append(s.onConnect, f)
}

// OnDisconnect adds a hook run once after a connection closes, whoever
// closed it. Hooks must not block for long: Shutdown waits for them.
func (s *Server) OnDisconnect(f func(*Conn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onDisconnect = append(s.onDisconnect, f)
}

// ListenAndServe listens on addr (host:port) and calls Serve.
func (s *Server) ListenAndServe(addr string) error {
	if s.err != nil {
		return s.err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("remoting: listen %s: %w", addr, err)
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln until Shutdown, then returns nil; any
// other accept failure is returned. Serve takes ownership of ln and closes
// it. It may be called for several listeners at once.
func (s *Server) Serve(ln net.Listener) error {
	if s.err != nil {
		ln.Close()
		return s.err
	}
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		ln.Close()
		return fmt.Errorf("%w: server is shut down", ErrClosed)
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isShutdown() && errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: back off as
				// net/http does rather than spin.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("remoting: accept failed, retrying", "err", err, "backoff", backoff)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("remoting: accept on %s: %w", ln.Addr(), err)
		}
		backoff = 0
		s.startConn(nc)
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (s *Server) isShutdown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shutdown
}

func (s *Server) startConn(nc net.Conn) {
	c := newConn(nc, &s.cfg)
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if s.opts.MaxConnections > 0 && len(s.conns) >= s.opts.MaxConnections {
		s.refused++
		n := s.refused
		s.mu.Unlock()
		nc.Close()
		// Log the first refusal and then every 1000th, not a flood.
		if n%1000 == 1 {
			s.log.Warn("remoting: connection refused", "remote", nc.RemoteAddr(),
				"err", fmt.Errorf("%w (limit %d)", ErrTooManyConnections, s.opts.MaxConnections), "refused", n)
		}
		return
	}
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	onConnect := s.onConnect
	s.mu.Unlock()
	c.addCloseHook(func(c *Conn) {
		s.mu.Lock()
		delete(s.conns, c)
		hooks := s.onDisconnect
		s.mu.Unlock()
		for _, h := range hooks {
			h(c)
		}
	})
	go func() {
		defer s.connWG.Done()
		s.log.Debug("remoting: connection accepted", "conn", c)
		if !s.startTransport(c, nc) {
			return
		}
		for _, h := range onConnect {
			h(c)
		}
		c.serve()
		s.log.Debug("remoting: connection closed", "conn", c, "cause", c.Err())
	}()
}

// startTransport applies the TLS mode to a new connection: it reads the
// first bytes (bounded by DefaultHandshakeTimeout when only TLS is
// accepted, else by IdleTimeout), refuses a client that does not speak
// what the mode accepts, and runs a TLS handshake, bounded, so a peer that
// opens a socket and never finishes one cannot hold a goroutine forever.
// It reports false after closing c.
func (s *Server) startTransport(c *Conn, nc net.Conn) bool {
	mode := effectiveTLSMode(s.opts.TLSMode, s.opts.TLSConfig)
	wait := s.opts.IdleTimeout
	if mode == TLSEnforcing {
		wait = DefaultHandshakeTimeout
	}
	conn, prefix, err := sniffTLS(nc, mode, s.opts.TLSConfig, wait)
	if err != nil {
		if errors.Is(err, ErrTLSMode) {
			s.log.Warn("remoting: connection refused", "remote", nc.RemoteAddr(), "tlsMode", mode, "err", err)
		} else {
			s.log.Debug("remoting: connection closed before its first frame", "remote", nc.RemoteAddr(), "err", err)
		}
		c.closeWith(err)
		return false
	}
	tc, ok := conn.(*tls.Conn)
	if !ok {
		c.rd = prefixReader(prefix, nc)
		return true
	}
	_ = tc.SetDeadline(time.Now().Add(DefaultHandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		s.log.Warn("remoting: TLS handshake failed", "remote", nc.RemoteAddr(), "err", err)
		c.closeWith(fmt.Errorf("TLS handshake: %w", err))
		return false
	}
	_ = tc.SetDeadline(time.Time{})
	c.rd = tc
	c.wq.setConn(tc)
	return true
}

// Addr returns the address of one of the listeners being served, or nil.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ln := range s.listeners {
		return ln.Addr()
	}
	return nil
}

// Conns returns the open connections (a snapshot).
func (s *Server) Conns() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// shutdownClosers is how many goroutines Shutdown closes connections from,
// so that an OnDisconnect hook slow on one connection does not hold back
// closing the others.
const shutdownClosers = 16

// Shutdown stops the server: it closes the listeners (Serve returns nil),
// answers new requests SYSTEM_BUSY, waits for running handlers to return
// (their replies are written), then closes every connection and waits for
// the connection goroutines and OnDisconnect hooks. If ctx ends first
// (while handlers run, or while connections are being closed), closing
// the connections is begun at once (cancelling handler contexts) and
// ctx's error is returned; handlers that ignore their context, and
// OnDisconnect hooks still running then, go on in the background.
// Responses answered later with Conn.Reply after Shutdown are lost.
// Shutdown may be called more than once.
//
// Closing costs one Close (and the OnDisconnect hooks) per connection,
// done from a few goroutines: with thousands of idle connections it takes
// milliseconds, as long as the hooks do not do per-connection work that
// grows with the number of connections.
func (s *Server) Shutdown(ctx context.Context) error {
	// Refuse new requests before Serve can return, so that a caller who
	// saw Serve return knows requests are being refused.
	drained := s.limit.close()
	s.mu.Lock()
	s.shutdown = true
	for ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()

	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = ctx.Err()
	}
	// No connection is added once shutdown is set (startConn checks it
	// under mu), so this snapshot is all of them.
	conns := s.Conns()
	done := make(chan struct{})
	go func() {
		closeAll(conns, shutdownClosers)
		s.connWG.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	if err != nil {
		return fmt.Errorf("remoting: shutdown: %w", err)
	}
	return nil
}

// closeAll closes conns from up to workers goroutines and returns once
// every Close, with its OnDisconnect hooks, has returned.
func closeAll(conns []*Conn, workers int) {
	workers = min(workers, len(conns))
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(conns) {
					return
				}
				conns[i].Close()
			}
		}()
	}
	wg.Wait()
}
