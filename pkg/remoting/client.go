package remoting

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Client sends requests to remote servers, keeping one connection per
// address (dialled on first use, redialled after it closes), and serves
// the requests those servers push back (Handle). All methods are safe for
// concurrent use.
type Client struct {
	opts ClientOptions
	log  *slog.Logger
	err  error // from opts.Validate, returned by every call
	mux  mux
	cfg  connConfig

	opaque atomic.Int32 // shared by all connections; first request gets 1

	mu           sync.Mutex
	conns        map[string]*dialEntry
	closed       bool
	onDisconnect []func(addr string)
	wg           sync.WaitGroup // reader goroutines; Add under mu while !closed
}

// dialEntry is one address's connection, or the dial in progress for it.
// Concurrent callers wait for the same dial.
type dialEntry struct {
	ready chan struct{} // closed when conn or err is set
	conn  *Conn
	err   error
}

// NewClient returns a client configured by opts (zero fields take their
// defaults). Invalid options make every call fail.
func NewClient(opts ClientOptions) *Client {
	err := opts.Validate()
	opts = opts.withDefaults()
	cl := &Client{opts: opts, log: opts.Logger, err: err, conns: map[string]*dialEntry{}}
	cl.cfg = connConfig{
		log:           opts.Logger,
		maxFrame:      opts.MaxFrameSize,
		idleTimeout:   opts.IdleTimeout,
		writeTimeout:  opts.WriteTimeout,
		requestHook:   opts.RequestHook,
		binaryHeaders: !opts.JSONHeaders,
		lookup:        cl.mux.lookup,
		opaque:        &cl.opaque,
		limit:         newLimiter(opts.MaxConcurrentRequests),
		perConnMax:    DefaultMaxConcurrentRequestsPerConn,
	}
	return cl
}

// Handle registers h for requests the server sends with code (for example
// CHECK_TRANSACTION_STATE or NOTIFY_CONSUMER_IDS_CHANGED). Requests with
// an unregistered code are logged and ignored, as rocketmq-client-go does.
func (cl *Client) Handle(code int16, h Handler) { cl.mux.handle(code, h) }

// HandleFunc registers f for server requests with code.
func (cl *Client) HandleFunc(code int16, f HandlerFunc) { cl.mux.handle(code, f) }

// OnDisconnect adds a hook run once after a connection the client dialled
// closes, whoever closed it, with the address it was dialled for (the next
// call to that address dials again). Hooks run in the closing goroutine:
// keep them short.
func (cl *Client) OnDisconnect(f func(addr string)) {
	cl.mu.Lock()
	cl.onDisconnect = append(cl.onDisconnect, f)
	cl.mu.Unlock()
}

// Conn returns the connection to addr, dialling it if there is none. The
// dial is bounded by DialTimeout and ctx.
func (cl *Client) Conn(ctx context.Context, addr string) (*Conn, error) {
	if cl.err != nil {
		return nil, cl.err
	}
	cl.mu.Lock()
	c, e, err := cl.lookup(addr)
	if c != nil || err != nil {
		cl.mu.Unlock()
		return c, err
	}
	if e != nil { // a dial is in progress: wait for it
		cl.mu.Unlock()
		select {
		case <-e.ready:
			return e.conn, e.err
		case <-ctx.Done():
			return nil, ctxError(ctx, "dial "+addr)
		}
	}
	e = &dialEntry{ready: make(chan struct{})}
	cl.conns[addr] = e
	cl.mu.Unlock()

	c, err = cl.dial(ctx, addr)

	cl.mu.Lock()
	if err == nil && cl.closed {
		err = fmt.Errorf("%w: client is closed", ErrClosed)
	}
	if err != nil {
		if cl.conns[addr] == e {
			delete(cl.conns, addr)
		}
		e.err = err
		close(e.ready)
		cl.mu.Unlock()
		if c != nil {
			c.Close()
		}
		return nil, err
	}
	e.conn = c
	close(e.ready)
	cl.wg.Add(1)
	cl.mu.Unlock()

	c.addCloseHook(func(c *Conn) {
		cl.mu.Lock()
		if cur := cl.conns[addr]; cur != nil && cur.conn == c {
			delete(cl.conns, addr)
		}
		hooks := cl.onDisconnect
		cl.mu.Unlock()
		for _, f := range hooks {
			f(addr)
		}
	})
	go func() {
		defer cl.wg.Done()
		c.serve()
		cl.log.Debug("remoting: client connection closed", "conn", c, "cause", c.Err())
	}()
	return c, nil
}

func (cl *Client) dial(ctx context.Context, addr string) (*Conn, error) {
	d := net.Dialer{Timeout: cl.opts.DialTimeout}
	var nc net.Conn
	var err error
	if cl.opts.TLSConfig != nil {
		td := tls.Dialer{NetDialer: &d, Config: cl.opts.TLSConfig}
		nc, err = td.DialContext(ctx, "tcp", addr)
	} else {
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, "dial "+addr)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrDial, addr, err)
	}
	c := newConn(nc, &cl.cfg)
	cl.log.Debug("remoting: connected", "conn", c)
	return c, nil
}

// Invoke sends req to addr and waits for the response; see Conn.Invoke.
func (cl *Client) Invoke(ctx context.Context, addr string, req *protocol.Command) (*protocol.Command, error) {
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		return nil, err
	}
	return c.Invoke(ctx, req)
}

// lookup finds addr's connection; cl.mu must be held. It returns the open
// connection, or the dial in progress (conn nil), or neither (none yet, or
// it closed or failed: dial again); err when the client is closed.
func (cl *Client) lookup(addr string) (conn *Conn, dialing *dialEntry, err error) {
	if cl.closed {
		return nil, nil, fmt.Errorf("%w: client is closed", ErrClosed)
	}
	e := cl.conns[addr]
	if e == nil {
		return nil, nil, nil
	}
	select {
	case <-e.ready:
		if e.conn != nil && e.conn.Err() == nil {
			return e.conn, nil, nil
		}
		return nil, nil, nil
	default:
		return nil, e, nil
	}
}

// cachedConn returns the open connection to addr, or nil when there is
// none yet (or it failed); err only when the client cannot be used.
func (cl *Client) cachedConn(addr string) (*Conn, error) {
	if cl.err != nil {
		return nil, cl.err
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	c, _, err := cl.lookup(addr)
	return c, err
}

// InvokeTimeout sends req to addr and waits for the response; see
// Conn.InvokeTimeout. A dial it needs is bounded by timeout too.
func (cl *Client) InvokeTimeout(ctx context.Context, addr string, req *protocol.Command, timeout time.Duration) (*protocol.Command, error) {
	c, err := cl.cachedConn(addr)
	if c == nil && err == nil { // first use: dial under a deadline
		dctx, cancel := context.WithTimeout(ctx, timeout)
		c, err = cl.Conn(dctx, addr)
		cancel()
	}
	if err != nil {
		return nil, err
	}
	return c.InvokeTimeout(ctx, req, timeout)
}

// InvokeAsync sends req to addr; cb gets the response. See
// Conn.InvokeAsync: if it returns nil, cb is called exactly once.
func (cl *Client) InvokeAsync(ctx context.Context, addr string, req *protocol.Command, cb func(*protocol.Command, error)) error {
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		return err
	}
	return c.InvokeAsync(ctx, req, cb)
}

// InvokeOneway sends req to addr with the oneway flag bit set and does not
// wait for anything but the write.
func (cl *Client) InvokeOneway(ctx context.Context, addr string, req *protocol.Command) error {
	c, err := cl.Conn(ctx, addr)
	if err != nil {
		return err
	}
	return c.InvokeOneway(ctx, req)
}

// CloseConn closes the connection to addr, if any; pending calls on it fail
// with ErrClosed. The next call to addr redials.
func (cl *Client) CloseConn(addr string) {
	cl.mu.Lock()
	e := cl.conns[addr]
	delete(cl.conns, addr)
	cl.mu.Unlock()
	if e == nil {
		return
	}
	select {
	case <-e.ready:
		if e.conn != nil {
			e.conn.Close()
		}
	default: // a dial in progress completes for its callers; nothing to close
	}
}

// Close closes every connection: pending calls fail with ErrClosed and
// pending async callbacks are called with it. It waits for the connection
// reader goroutines to stop but not for running handlers (their contexts
// are cancelled). Later calls fail with ErrClosed. Close is idempotent.
func (cl *Client) Close() error {
	cl.mu.Lock()
	cl.closed = true
	entries := cl.conns
	cl.conns = map[string]*dialEntry{}
	cl.mu.Unlock()
	for _, e := range entries {
		select {
		case <-e.ready:
			if e.conn != nil {
				e.conn.Close()
			}
		default: // the dialler sees closed and closes what it gets
		}
	}
	cl.wg.Wait()
	return nil
}
