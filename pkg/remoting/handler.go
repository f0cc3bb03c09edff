package remoting

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Handler serves one request.
//
// The handler owns req (its Body aliases a buffer nobody else uses) and may
// keep it. The returned command, if any, is handed to the transport, which
// sets its Opaque and response flag and writes it; the handler must not
// touch it afterwards. Returning nil sends nothing: use that for requests
// answered later with Conn.Reply (long polling) or for oneway requests.
// Since rocketmq-client-go v2.1.2 waits for a reply to every request without
// the oneway flag bit, a handler must answer those one way or the other.
//
// ctx is cancelled when the connection closes. Handlers run concurrently,
// each in its own goroutine (except what an InlineHandler serves inline,
// on the connection's read loop); a panic is recovered and answered with
// SYSTEM_ERROR.
type Handler interface {
	ServeRemoting(ctx context.Context, c *Conn, req *protocol.Command) *protocol.Command
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, c *Conn, req *protocol.Command) *protocol.Command

// ServeRemoting calls f.
func (f HandlerFunc) ServeRemoting(ctx context.Context, c *Conn, req *protocol.Command) *protocol.Command {
	return f(ctx, c, req)
}

// mux maps request codes to handlers. Registration copies the map so that
// the per-request lookup takes no lock.
type mux struct {
	mu sync.Mutex // serialises writers
	m  atomic.Pointer[map[int16]Handler]
}

func (x *mux) handle(code int16, h Handler) {
	x.mu.Lock()
	defer x.mu.Unlock()
	next := map[int16]Handler{}
	if cur := x.m.Load(); cur != nil {
		for k, v := range *cur {
			next[k] = v
		}
	}
	if h == nil {
		delete(next, code)
	} else {
		next[code] = h
	}
	x.m.Store(&next)
}

func (x *mux) codes() []int16 {
	m := x.m.Load()
	if m == nil {
		return nil
	}
	out := make([]int16, 0, len(*m))
	for k := range *m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (x *mux) lookup(code int16) Handler {
	if m := x.m.Load(); m != nil {
		return (*m)[code]
	}
	return nil
}

// limiter counts in-flight handlers against a bound and lets a closer wait
// for the count to reach zero. Unlike sync.WaitGroup it may be acquired
// while someone waits: acquisitions after close simply fail.
type limiter struct {
	mu      sync.Mutex
	n, max  int
	closing bool
	zero    chan struct{} // closed when closing and n == 0
}

func newLimiter(max int) *limiter {
	return &limiter{max: max, zero: make(chan struct{})}
}

// acquire reports whether a slot was taken; busy is false when it failed
// because the limiter is closing.
func (l *limiter) acquire() (ok, closing bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return false, true
	}
	if l.n >= l.max {
		return false, false
	}
	l.n++
	return true, false
}

func (l *limiter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.n == 0 && l.closing {
		close(l.zero)
	}
}

// close refuses further acquisitions and returns a channel closed once
// every slot has been released. It may be called more than once.
func (l *limiter) close() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closing {
		l.closing = true
		if l.n == 0 {
			close(l.zero)
		}
	}
	return l.zero
}

// InlineHandler is a Handler that can serve some requests on the
// connection's read loop instead of a goroutine of its own, which saves a
// goroutine hand-off per request and lets the responses of one burst of
// requests leave in one write (see Conn.serve).
//
// Contract: ServeInline runs on the goroutine that reads the connection,
// so while it runs no other request of that connection is read. It must
// therefore never block: no waiting for a flush, a replica, a long poll,
// another connection's write, or a lock held across I/O. When serving req
// could block, it must return served false without side effects; the
// transport then calls ServeRemoting for req in a goroutine as for any
// handler. When it returns served true, resp is handled as ServeRemoting's
// result (nil sends nothing). The interceptor, if any, runs on the read
// loop too before ServeInline (it must not block either), and the
// in-flight bounds apply as for any request.
type InlineHandler interface {
	Handler
	ServeInline(ctx context.Context, c *Conn, req *protocol.Command) (resp *protocol.Command, served bool)
}

// InlineFunc is the inline attempt of an InlineHandler (see ServeInline).
type InlineFunc func(ctx context.Context, c *Conn, req *protocol.Command) (resp *protocol.Command, served bool)

// Inline pairs a handler with its inline attempt.
func Inline(serve HandlerFunc, inline InlineFunc) InlineHandler {
	return inlineHandler{serve, inline}
}

type inlineHandler struct {
	serve  HandlerFunc
	inline InlineFunc
}

func (h inlineHandler) ServeRemoting(ctx context.Context, c *Conn, req *protocol.Command) *protocol.Command {
	return h.serve(ctx, c, req)
}

func (h inlineHandler) ServeInline(ctx context.Context, c *Conn, req *protocol.Command) (*protocol.Command, bool) {
	return h.inline(ctx, c, req)
}
