package remoting

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/remoting/workers"
)

const (
	// maxPooledFrame: encode buffers that grew beyond this are dropped
	// instead of pooled, so one huge response does not pin memory.
	maxPooledFrame = 1 << 20
	// maxQueuedBytes bounds the frames waiting behind a write in progress
	// on one connection; writers beyond it block until that write ends
	// (backpressure). A single larger frame is still admitted alone.
	maxQueuedBytes = 4 << 20
)

var connIDs atomic.Uint64

// connConfig is what a Conn needs from the Server or Client that owns it.
type connConfig struct {
	log          *slog.Logger
	maxFrame     int
	maxHeader    int // 0: no bound beyond the frame's
	idleTimeout  time.Duration
	frameTimeout time.Duration // 0: none
	intercept    Interceptor
	requestHook  func(*protocol.Command)
	// binaryHeaders: requests this end sends (Client only) carry the
	// ROCKETMQ binary header instead of JSON (ClientOptions.JSONHeaders).
	binaryHeaders bool
	writeTimeout  time.Duration
	lookup        func(code int16) Handler
	// server selects the server rules: unknown codes are answered
	// REQUEST_CODE_NOT_SUPPORTED (a client logs and ignores them).
	server     bool
	opaque     *atomic.Int32 // opaque counter shared by the owner's conns
	limit      *limiter      // owner-wide handler bound
	perConnMax int32
}

// Conn is one connection, accepted by a Server or dialled by a Client. Both
// ends are symmetric: either side may send requests (Invoke,
// InvokeOneway) and serve the other's (handlers). All methods are safe for
// concurrent use. Writes are ordered and coalesced (see writeQueue); one
// goroutine per connection reads frames and dispatches them.
type Conn struct {
	id  uint64
	nc  net.Conn  // the socket: addresses, deadlines, Close
	rd  io.Reader // what frames are read from, if not nc (TLS, or bytes already sniffed)
	cfg *connConfig

	ctx    context.Context // cancelled on close; parent of handler contexts
	cancel context.CancelFunc

	wq writeQueue // write side

	inflight atomic.Int32 // handlers running for this connection

	// Owned by the read loop: the frames of responses served inline
	// (InlineHandler) not yet written, and how many in-flight slots they
	// still hold (released once written, so that Shutdown's wait for
	// running handlers covers their replies).
	out     []byte
	outHeld int32

	mu       sync.Mutex
	futures  map[int32]*future // nil once closed
	closeErr error             // why the connection closed
	onClose  []func(*Conn)

	done   chan struct{}
	values sync.Map
}

func newConn(nc net.Conn, cfg *connConfig) *Conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		id:      connIDs.Add(1),
		nc:      nc,
		cfg:     cfg,
		ctx:     ctx,
		cancel:  cancel,
		futures: map[int32]*future{},
		done:    make(chan struct{}),
	}
	c.wq.init(nc)
	return c
}

// ID returns a process-unique connection number (for logs and maps).
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// LocalAddr returns the local address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// Done returns a channel closed when the connection is closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection closed (nil while it is open).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// SetValue attaches a value to the connection (for example the client id
// learnt from a heartbeat). Safe for concurrent use.
func (c *Conn) SetValue(key, val any) { c.values.Store(key, val) }

// Value returns a value stored with SetValue, or nil.
func (c *Conn) Value(key any) any {
	v, _ := c.values.Load(key)
	return v
}

// String identifies the connection in logs.
func (c *Conn) String() string {
	return fmt.Sprintf("conn#%d(%s->%s)", c.id, c.nc.LocalAddr(), c.nc.RemoteAddr())
}

// Close closes the connection. Pending Invoke calls fail with ErrClosed and
// pending InvokeAsync callbacks are called with it; handler contexts are
// cancelled. Frames whose write has not completed when Close is called may
// or may not reach the peer; their senders (Invoke, InvokeOneway, Reply...)
// get an error wrapping ErrClosed unless the write completed. Later writes
// fail at once. Close is idempotent and safe for concurrent use; it does not
// wait for running handlers or for a write in progress.
func (c *Conn) Close() error {
	return c.closeWith(ErrClosed)
}

// closeWith closes the connection once, recording cause. Writers may call
// it: it takes the write queue's lock only briefly, never across I/O.
func (c *Conn) closeWith(cause error) error {
	c.mu.Lock()
	if c.futures == nil {
		c.mu.Unlock()
		return nil
	}
	if !errors.Is(cause, ErrClosed) {
		cause = fmt.Errorf("%w: %w", ErrClosed, cause)
	}
	c.wq.fail(cause) // queued frames are not written after this
	pending := c.futures
	c.futures = nil
	c.closeErr = cause
	hooks := c.onClose
	c.onClose = nil
	c.mu.Unlock()

	err := c.nc.Close()
	c.cancel()
	close(c.done)
	for op, f := range pending {
		f.complete(nil, fmt.Errorf("%w (request opaque %d to %s)", cause, op, c.nc.RemoteAddr()))
	}
	for _, h := range hooks {
		h(c)
	}
	return err
}

// addCloseHook registers f to run once when the connection closes (at once
// if it is already closed).
func (c *Conn) addCloseHook(f func(*Conn)) {
	c.mu.Lock()
	if c.futures != nil {
		c.onClose = append(c.onClose, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	f(c)
}

// ---- requests sent by this end ----

// future is a call waiting for its response. Whoever removes it from the
// future table completes it, so it completes exactly once.
type future struct {
	ch   chan result // sync calls; buffered 1
	cb   func(*protocol.Command, error)
	stop func() bool // stops the async timeout; set under Conn.mu
}

type result struct {
	cmd *protocol.Command
	err error
}

func (f *future) complete(cmd *protocol.Command, err error) {
	if f.cb == nil {
		f.ch <- result{cmd, err}
		return
	}
	if f.stop != nil {
		f.stop()
	}
	cb := f.cb
	workers.Shared().Go(func() { cb(cmd, err) })
}

func (c *Conn) takeFuture(opaque int32) *future {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.futures[opaque]
	if f != nil {
		delete(c.futures, opaque)
	}
	return f
}

// request copies req with a fresh opaque and the given flag bits, so the
// caller's command is never modified.
func (c *Conn) request(req *protocol.Command, oneway bool) protocol.Command {
	r := *req
	if c.cfg.binaryHeaders {
		r.SerializeType = protocol.SerializeRocketMQ
	}
	if c.cfg.requestHook != nil {
		// The hook may add fields and must see all of them (a signature
		// covers every field): give it a map of its own, the typed
		// header's fields included, so the caller's command is left as
		// it was.
		var ext map[string]string
		if req.Header != nil {
			ext = req.Header.Encode()
			r.Header = nil
		} else {
			ext = make(map[string]string, len(req.ExtFields)+3)
		}
		for k, v := range req.ExtFields {
			ext[k] = v
		}
		r.ExtFields = ext
		c.cfg.requestHook(&r)
	}
	r.Opaque = c.cfg.opaque.Add(1)
	r.Flag &^= protocol.FlagResponse | protocol.FlagOneway
	if oneway {
		r.Flag |= protocol.FlagOneway
	}
	return r
}

// Invoke sends req and waits for the response with the same opaque, or
// until ctx is done (ErrTimeout, also matching context.DeadlineExceeded, for
// a deadline). req is not modified or retained: the transport sends a copy
// with its own opaque. The response is returned whatever its code; use
// resp.Err() to turn a non-SUCCESS code into an error. A response arriving
// after the call gave up is dropped.
func (c *Conn) Invoke(ctx context.Context, req *protocol.Command) (*protocol.Command, error) {
	return c.invoke(ctx, req, 0)
}

// InvokeTimeout is Invoke bounded by timeout as well as by ctx: after
// timeout it fails with ErrTimeout (matching context.DeadlineExceeded too).
// It costs one pooled timer instead of a derived context (context, timer
// and channel per call), which counts on the send path. timeout <= 0 means
// no bound beyond ctx.
func (c *Conn) InvokeTimeout(ctx context.Context, req *protocol.Command, timeout time.Duration) (*protocol.Command, error) {
	return c.invoke(ctx, req, timeout)
}

// timerPool holds stopped timers. Since Go 1.23 a stopped or reset timer
// never delivers a stale value, so reuse is safe.
var timerPool sync.Pool

func getTimer(d time.Duration) *time.Timer {
	if t, ok := timerPool.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(t *time.Timer) {
	t.Stop()
	timerPool.Put(t)
}

func (c *Conn) invoke(ctx context.Context, req *protocol.Command, timeout time.Duration) (*protocol.Command, error) {
	if ctx.Err() != nil {
		return nil, ctxError(ctx, fmt.Sprintf("invoke code %d on %s", req.Code, c.nc.RemoteAddr()))
	}
	r := c.request(req, false)
	f := &future{ch: make(chan result, 1)}
	c.mu.Lock()
	if c.futures == nil {
		err := c.closeErr
		c.mu.Unlock()
		return nil, err
	}
	c.futures[r.Opaque] = f
	c.mu.Unlock()

	var expired <-chan time.Time
	if timeout > 0 {
		t := getTimer(timeout)
		defer putTimer(t)
		expired = t.C
	}
	if err := c.send(&r); err != nil {
		if c.takeFuture(r.Opaque) != nil {
			return nil, err
		}
		res := <-f.ch // completed by a close racing with the failed write
		return res.cmd, res.err
	}
	var gaveUp error
	select {
	case res := <-f.ch:
		return res.cmd, res.err
	case <-expired:
		gaveUp = fmt.Errorf("%w: invoke code %d opaque %d on %s: no response within %v: %w",
			ErrTimeout, req.Code, r.Opaque, c.nc.RemoteAddr(), timeout, context.DeadlineExceeded)
	case <-ctx.Done():
		gaveUp = ctxError(ctx, fmt.Sprintf("invoke code %d opaque %d on %s", req.Code, r.Opaque, c.nc.RemoteAddr()))
	}
	if c.takeFuture(r.Opaque) != nil {
		return nil, gaveUp
	}
	res := <-f.ch // the response won the race
	return res.cmd, res.err
}

// InvokeAsync sends req and returns once it is written. If it returns nil,
// cb is called exactly once, in its own goroutine, with the response, or
// with an error when the connection closes or ctx is done first (give ctx a
// deadline: without one, only the response or a close ends the call). If it
// returns an error, cb is never called.
func (c *Conn) InvokeAsync(ctx context.Context, req *protocol.Command, cb func(*protocol.Command, error)) error {
	if cb == nil {
		return errors.New("remoting: InvokeAsync with nil callback")
	}
	if ctx.Err() != nil {
		return ctxError(ctx, fmt.Sprintf("invoke code %d on %s", req.Code, c.nc.RemoteAddr()))
	}
	r := c.request(req, false)
	f := &future{cb: cb}
	op, code, addr := r.Opaque, req.Code, c.nc.RemoteAddr()
	c.mu.Lock()
	if c.futures == nil {
		err := c.closeErr
		c.mu.Unlock()
		return err
	}
	c.futures[op] = f
	// Registered under mu, so a completer that removes f sees stop set. If
	// ctx is already done the func runs in another goroutine and waits for
	// mu like any other completer.
	f.stop = context.AfterFunc(ctx, func() {
		c.mu.Lock()
		mine := c.futures[op] == f
		if mine {
			delete(c.futures, op)
		}
		c.mu.Unlock()
		if mine {
			cb(nil, ctxError(ctx, fmt.Sprintf("invoke code %d opaque %d on %s", code, op, addr)))
		}
	})
	c.mu.Unlock()

	if err := c.send(&r); err != nil {
		if c.takeFuture(op) != nil {
			f.stop()
			return err
		}
		return nil // a close completed f: cb has its error
	}
	return nil
}

// InvokeOneway sends req with the oneway flag bit (2) set, so the peer
// sends no response, and returns once it is written. req is not modified.
func (c *Conn) InvokeOneway(ctx context.Context, req *protocol.Command) error {
	if ctx.Err() != nil {
		return ctxError(ctx, fmt.Sprintf("oneway code %d on %s", req.Code, c.nc.RemoteAddr()))
	}
	r := c.request(req, true)
	return c.send(&r)
}

// TryInvokeOneway sends req oneway within timeout: a write that may be
// dropped and must not wait on a peer that stops reading
// (NOTIFY_CONSUMER_IDS_CHANGED). It waits for the connection's other
// writes to end until timeout (ErrWriteBusy, nothing sent, when they do
// not), then writes with the time left; ErrTimeout means the peer took no
// byte of the frame (a plain TCP connection stays open). A frame cut
// short by the deadline, or a timeout on TLS (whose stream cannot
// resume), closes the connection, as any failed write does.
func (c *Conn) TryInvokeOneway(req *protocol.Command, timeout time.Duration) error {
	r := c.request(req, true)
	frame, err := r.AppendFrame(nil)
	if err != nil {
		return fmt.Errorf("remoting: encode code %d: %w", r.Code, err)
	}
	failed, err := c.wq.tryWrite(frame, timeout)
	if failed {
		c.cfg.log.Debug("remoting: write failed, closing", "conn", c, "err", err)
		c.closeWith(err)
	}
	return err
}

// Reply sends resp as the response to req: it sets resp's Opaque to
// req's and its response flag. It does nothing for a request with the
// oneway flag bit. Handlers that return nil use it to answer later (long
// polling); resp belongs to the transport afterwards. Like every write, it
// blocks until the frame is written or has failed (package doc,
// Concurrency); a failed write closes the connection.
func (c *Conn) Reply(req, resp *protocol.Command) error {
	if req.IsOneway() {
		return nil
	}
	resp.Opaque = req.Opaque
	resp.Flag |= protocol.FlagResponse
	return c.send(resp)
}

// ---- writing ----

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// send encodes cmd and writes it (see writeQueue.write for blocking and
// errors). A write error closes the connection.
func (c *Conn) send(cmd *protocol.Command) error {
	bp := framePool.Get().(*[]byte)
	frame, err := cmd.AppendFrame((*bp)[:0])
	if err != nil {
		framePool.Put(bp)
		return fmt.Errorf("remoting: encode code %d: %w", cmd.Code, err)
	}
	err = c.write(frame)
	// write returned, so no batch refers to frame any more.
	if cap(frame) <= maxPooledFrame {
		*bp = frame[:0]
		framePool.Put(bp)
	}
	return err
}

// write writes one encoded frame in order with the connection's other
// frames and returns once it is written or has failed.
func (c *Conn) write(frame []byte) error {
	return c.writeFrames(frame, true)
}

// writeDirect is write for frames already gathered by the caller (the
// read loop's inline responses): it does not yield to gather more.
func (c *Conn) writeDirect(frames []byte) error {
	return c.writeFrames(frames, false)
}

func (c *Conn) writeFrames(frame []byte, gather bool) error {
	failed, err := c.wq.writeGather(frame, c.cfg.writeTimeout, gather)
	if failed {
		c.cfg.log.Debug("remoting: write failed, closing", "conn", c, "err", err)
		c.closeWith(err)
	}
	return err
}

// ---- reading and dispatch ----

// serve reads frames until the connection fails, then closes it.
func (c *Conn) serve() {
	var r io.Reader = c.nc
	if c.rd != nil {
		r = c.rd
	}
	br := newReadBuf(r)
	err := c.readLoop(br)
	br.release() // the frames read own their bytes (readFrame copies)
	if len(c.out) > 0 || c.outHeld > 0 {
		_ = c.flushInline() // the replies to requests served before the read failed
	}
	c.closeWith(err)
}

// maxInlineOut is the most bytes of inline responses the read loop holds
// before writing them even though more requests are buffered.
const maxInlineOut = 64 << 10

// frameBuffered reports whether br holds a whole frame, so that reading
// it does not wait for the socket.
func frameBuffered(br *readBuf) bool {
	p := br.peek()
	if len(p) < 4 {
		return false
	}
	return uint64(len(p)) >= 4+uint64(binary.BigEndian.Uint32(p))
}

// flushInline writes the responses served inline so far in one write and
// releases their in-flight slots. The caller is the read loop.
func (c *Conn) flushInline() error {
	var err error
	if len(c.out) > 0 {
		err = c.writeDirect(c.out)
		if cap(c.out) > 4*maxInlineOut {
			c.out = nil // one huge burst does not pin memory
		} else {
			c.out = c.out[:0]
		}
	}
	for ; c.outHeld > 0; c.outHeld-- {
		c.inflight.Add(-1)
		c.cfg.limit.release()
	}
	return err
}

func (c *Conn) readLoop(br *readBuf) error {
	var lenBuf [4]byte
	for {
		// Responses served inline leave in one write once the requests
		// already received are served: before a read that may wait for
		// the socket, or when they are many.
		if len(c.out) > 0 && (len(c.out) >= maxInlineOut || !frameBuffered(br)) {
			if err := c.flushInline(); err != nil {
				return err
			}
		}
		switch {
		case c.cfg.idleTimeout > 0:
			_ = c.nc.SetReadDeadline(time.Now().Add(c.cfg.idleTimeout))
		case c.cfg.frameTimeout > 0:
			_ = c.nc.SetReadDeadline(time.Time{}) // clear the last frame's
		}
		if _, err := io.ReadFull(br, lenBuf[:]); err != nil {
			return c.readError(err)
		}
		if c.cfg.frameTimeout > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(c.cfg.frameTimeout))
		}
		total := binary.BigEndian.Uint32(lenBuf[:])
		if err := protocol.CheckFrameLength(total, c.cfg.maxFrame); err != nil {
			c.cfg.log.Warn("remoting: bad frame length, closing connection", "conn", c, "err", err)
			return err
		}
		// A fresh buffer per frame: the decoded Command's Body aliases it
		// and is handed to a handler or a caller that may keep it.
		buf, err := readFrame(br, int(total))
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.cfg.log.Warn("remoting: frame not received in time, closing connection",
					"conn", c, "length", total, "timeout", c.cfg.frameTimeout)
				return fmt.Errorf("frame of %d bytes not received within %v: %w", total, c.cfg.frameTimeout, err)
			}
			return c.readError(err)
		}
		err = protocol.CheckHeaderLength(buf, c.cfg.maxHeader)
		var cmd *protocol.Command
		if err == nil {
			cmd, err = protocol.DecodeFrame(buf)
		}
		if err != nil {
			if !c.badFrame(buf, err) {
				return err
			}
			continue
		}
		if cmd.IsResponse() {
			c.deliver(cmd)
		} else {
			c.dispatch(cmd)
		}
	}
}

// frameChunk is the most readFrame allocates ahead of the bytes that
// actually arrived.
const frameChunk = 64 << 10

// frameChunks holds the frameChunk-sized buffers a large frame is read
// into before its own buffer is allocated.
var frameChunks = sync.Pool{New: func() any { b := make([]byte, frameChunk); return &b }}

// readFrame reads a frame body of n bytes. Memory grows with the bytes
// received, not with the length announced: a peer announcing 16 MiB
// frames on many connections and sending nothing more costs little. A
// frame of up to frameChunk bytes is read into its own buffer; a larger
// one into pooled chunks of frameChunk bytes, and its own buffer of
// exactly n bytes is allocated once all of them arrived (before, the
// buffer doubled as bytes came, so a 280 KB pull response allocated
// 64 + 128 + 256 + 288 KiB). The caller owns the returned buffer.
func readFrame(r io.Reader, n int) ([]byte, error) {
	if n <= frameChunk {
		buf := make([]byte, n)
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	var arr [32]*[]byte // up to 2 MiB without allocating the list
	chunks := arr[:0]
	defer func() {
		for _, c := range chunks {
			frameChunks.Put(c)
		}
	}()
	for got := 0; got < n; {
		c := frameChunks.Get().(*[]byte)
		chunks = append(chunks, c)
		m, err := io.ReadFull(r, (*c)[:min(frameChunk, n-got)])
		got += m
		if err != nil {
			return nil, err
		}
	}
	buf := make([]byte, n)
	for i, c := range chunks {
		copy(buf[i*frameChunk:], (*c)[:min(frameChunk, n-i*frameChunk)])
	}
	return buf, nil
}

func (c *Conn) readError(err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return err
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.cfg.log.Info("remoting: idle timeout, closing connection", "conn", c, "idle", c.cfg.idleTimeout)
		return fmt.Errorf("idle for %v: %w", c.cfg.idleTimeout, err)
	case errors.Is(err, errNegativeRead):
		c.cfg.log.Warn("remoting: broken reader, closing connection", "conn", c, "err", err)
		return err
	}
	c.cfg.log.Debug("remoting: read failed", "conn", c, "err", err)
	return err
}

// badFrame handles a frame that was read whole but does not decode
// (protocol.InspectBadFrame). The stream is still in sync, so when the
// opaque can be recovered the sender is told (SYSTEM_ERROR) and reading
// goes on; otherwise it reports false and the connection is closed.
func (c *Conn) badFrame(buf []byte, derr error) bool {
	bf, ok := protocol.InspectBadFrame(buf, derr)
	if !ok {
		c.cfg.log.Warn("remoting: undecodable frame, closing connection", "conn", c, "err", derr)
		return false
	}
	switch {
	case bf.IsResponse():
		c.cfg.log.Warn("remoting: undecodable response", "conn", c, "opaque", bf.Opaque, "err", derr)
		if f := c.takeFuture(bf.Opaque); f != nil {
			f.complete(nil, fmt.Errorf("remoting: response from %s: %w", c.nc.RemoteAddr(), derr))
		}
	case bf.IsOneway():
		c.cfg.log.Warn("remoting: undecodable oneway request", "conn", c, "opaque", bf.Opaque, "err", derr)
	default:
		c.cfg.log.Warn("remoting: undecodable request, answering SYSTEM_ERROR", "conn", c, "opaque", bf.Opaque, "err", derr)
		if err := c.send(bf.Reply()); err != nil {
			return false
		}
	}
	return true
}

// deliver completes the future waiting for resp.
func (c *Conn) deliver(resp *protocol.Command) {
	f := c.takeFuture(resp.Opaque)
	if f == nil {
		c.cfg.log.Debug("remoting: response for unknown opaque dropped (late or never asked)",
			"conn", c, "opaque", resp.Opaque, "code", resp.Code)
		return
	}
	f.complete(resp, nil)
}

// dispatch runs the handler of req in its own goroutine, within the
// connection's and the owner's bounds.
func (c *Conn) dispatch(req *protocol.Command) {
	h := c.cfg.lookup(req.Code)
	if h == nil {
		if !c.cfg.server {
			c.cfg.log.Warn("remoting: no handler for server request, ignored", "conn", c, "code", req.Code)
			return
		}
		c.cfg.log.Debug("remoting: request code not supported", "conn", c, "code", req.Code)
		c.replyError(req, protocol.RequestCodeNotSupported, fmt.Sprintf("request type %d not supported", req.Code))
		return
	}
	if c.inflight.Add(1) > c.cfg.perConnMax {
		c.inflight.Add(-1)
		c.replyError(req, protocol.SystemBusy,
			fmt.Sprintf("[OVERLOAD]too many requests in flight on this connection (limit %d), try again later", c.cfg.perConnMax))
		return
	}
	if ok, closing := c.cfg.limit.acquire(); !ok {
		c.inflight.Add(-1)
		if closing {
			c.replyError(req, protocol.SystemBusy, "[SHUTDOWN]server is shutting down")
		} else {
			c.replyError(req, protocol.SystemBusy, "[OVERLOAD]too many requests in flight, try again later")
		}
		return
	}
	if ih, ok := h.(InlineHandler); ok {
		if c.serveInline(ih, req) {
			return
		}
		workers.Shared().Go(func() { c.run(h, req, true) })
		return
	}
	workers.Shared().Go(func() { c.run(h, req, false) })
}

// serveInline runs the interceptor and h's inline attempt on the read
// loop, holding the request's in-flight slots. It reports false when h
// declined: the caller then runs h in a goroutine with the slots still
// held and the interceptor already passed. A response is appended to
// c.out and its slots are released when c.out is written (flushInline).
func (c *Conn) serveInline(h InlineHandler, req *protocol.Command) bool {
	var resp *protocol.Command
	if c.cfg.intercept != nil {
		resp = c.intercepted(req)
	}
	if resp == nil {
		var served bool
		if resp, served = c.callInline(h, req); !served {
			return false
		}
	}
	c.outHeld++
	if resp == nil || req.IsOneway() {
		return true
	}
	resp.Opaque = req.Opaque
	resp.Flag |= protocol.FlagResponse
	n := len(c.out)
	out, err := resp.AppendFrame(c.out)
	if err != nil {
		c.out = out[:n]
		c.cfg.log.Debug("remoting: reply not sent", "conn", c, "code", req.Code, "opaque", req.Opaque,
			"err", fmt.Errorf("remoting: encode code %d: %w", resp.Code, err))
		return true
	}
	c.out = out
	return true
}

// callInline runs h's inline attempt, turning a panic into a SYSTEM_ERROR
// response.
func (c *Conn) callInline(h InlineHandler, req *protocol.Command) (resp *protocol.Command, served bool) {
	defer func() {
		if r := recover(); r != nil {
			c.cfg.log.Error("remoting: handler panic", "conn", c, "code", req.Code,
				"opaque", req.Opaque, "panic", r, "stack", string(debug.Stack()))
			resp = protocol.NewResponse(req, protocol.SystemError,
				fmt.Sprintf("internal error serving request code %d: %v", req.Code, r))
			served = true
		}
	}()
	return h.ServeInline(c.ctx, c, req)
}

// run serves req in its own goroutine; passed means the interceptor
// already let it through (an inline attempt that declined).
func (c *Conn) run(h Handler, req *protocol.Command, passed bool) {
	defer func() {
		c.inflight.Add(-1)
		c.cfg.limit.release()
	}()
	var resp *protocol.Command
	if c.cfg.intercept != nil && !passed {
		resp = c.intercepted(req)
	}
	if resp == nil {
		resp = c.call(h, req)
	}
	if resp == nil {
		return
	}
	if err := c.Reply(req, resp); err != nil {
		c.cfg.log.Debug("remoting: reply not sent", "conn", c, "code", req.Code, "opaque", req.Opaque, "err", err)
	}
}

// intercepted runs the interceptor; a panic refuses the request.
func (c *Conn) intercepted(req *protocol.Command) (resp *protocol.Command) {
	defer func() {
		if r := recover(); r != nil {
			c.cfg.log.Error("remoting: interceptor panic", "conn", c, "code", req.Code, "panic", r, "stack", string(debug.Stack()))
			resp = protocol.NewResponse(req, protocol.SystemError, fmt.Sprintf("internal error checking request code %d", req.Code))
		}
	}()
	return c.cfg.intercept(c.ctx, c, req)
}

// call runs the handler, turning a panic into a SYSTEM_ERROR response.
func (c *Conn) call(h Handler, req *protocol.Command) (resp *protocol.Command) {
	defer func() {
		if r := recover(); r != nil {
			c.cfg.log.Error("remoting: handler panic", "conn", c, "code", req.Code,
				"opaque", req.Opaque, "panic", r, "stack", string(debug.Stack()))
			resp = protocol.NewResponse(req, protocol.SystemError,
				fmt.Sprintf("internal error serving request code %d: %v", req.Code, r))
		}
	}()
	return h.ServeRemoting(c.ctx, c, req)
}

func (c *Conn) replyError(req *protocol.Command, code int16, remark string) {
	if req.IsOneway() {
		return
	}
	if err := c.Reply(req, protocol.NewResponse(req, code, remark)); err != nil {
		c.cfg.log.Debug("remoting: error reply not sent", "conn", c, "err", err)
	}
}
