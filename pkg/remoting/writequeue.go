package remoting

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"
)

// writeQueue orders and coalesces the frame writes of one connection
// without a goroutine of its own and without holding a lock across I/O.
//
// Whoever writes while no write is in progress becomes the writer: it
// yields the processor (runtime.Gosched) so that goroutines already
// runnable -- typically the handlers of requests read in the same burst,
// or other senders -- can queue their frames, yields again (up to
// maxYields) while each yield brings more, then writes its frame and
// everything queued meanwhile in one syscall. After a yield that gathered
// nothing, the next yieldBackoff idle writes do not yield. Frames written
// while a write is in progress join the pending batch; when that write
// ends, the first writer of the batch (its leader) is woken and writes the
// whole batch in one syscall (writev on TCP, one buffer otherwise, e.g.
// TLS), then hands over to the next batch. So each caller performs at most
// one write, the lock guards only the queue, and under load a syscall
// carries many frames. A yield costs a lone writer well under a
// microsecond; with many writers it replaces a syscall per frame (each
// also waking the peer's reader) by one per burst (TestWriteQueueGathers;
// tools/mqbench figures in docs/benchmarks/analysis.md).
//
// Contract of write: safe for concurrent use; frames go out in the order
// their write calls entered the queue; it blocks until the frame is
// written or has failed, that is for the write in progress plus the
// caller's own batch, each bounded by the write timeout, plus any time
// spent waiting for room when maxQueuedBytes are already pending
// (backpressure). The caller keeps ownership of frame and may reuse it
// once write returns. After a write fails, or after fail is called (on
// close), every queued and later frame fails with the same error wrapping
// ErrClosed.
type writeQueue struct {
	nc       net.Conn
	vectored bool // nc writes net.Buffers with writev

	mu      sync.Mutex
	room    sync.Cond // signalled when pending is taken or err is set
	busy    bool      // a write is in progress
	pending *writeBatch
	queued  int   // bytes in pending
	err     error // sticky; set once
	// skipYields counts idle writes still to go without yielding: a yield
	// that gathered nothing (one request at a time, a consumer's pulls)
	// only cost a trip through the scheduler's global queue, so the next
	// yieldBackoff idle writes go straight out.
	skipYields int
}

// yieldBackoff is how many idle writes skip the yield after one that
// gathered no other frame.
const yieldBackoff = 16

// maxYields bounds the yields of one idle write. In the in-process send
// benchmark with 64 requests in flight, one yield gathered 3-5 frames per
// write and up to three 4-9 (none: 1.1).
const maxYields = 3

// writeBatch is frames queued behind a write in progress. Its fields other
// than bufs are written before turn or done is closed and read after.
type writeBatch struct {
	bufs     [][]byte
	err      error
	absorbed bool          // written by the yielding writer together with its own frame
	turn     chan struct{} // closed when the leader may write (or err is set)
	done     chan struct{} // closed when the batch is written or failed
}

func (q *writeQueue) init(nc net.Conn) {
	q.nc = nc
	q.room.L = &q.mu
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
		q.vectored = true
	}
}

// setConn replaces the connection written to (a server connection that
// turned out to speak TLS), before anything is written.
func (q *writeQueue) setConn(nc net.Conn) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nc = nc
	_, tcp := nc.(*net.TCPConn)
	_, unix := nc.(*net.UnixConn)
	q.vectored = tcp || unix
}

// write writes frame; see writeQueue. failed reports that this call's own
// I/O failed, so the caller should close the connection; err is then the
// error every other frame of the connection fails with too.
func (q *writeQueue) write(frame []byte, timeout time.Duration) (failed bool, err error) {
	return q.writeGather(frame, timeout, true)
}

// writeGather is write; gather false skips the yields of an idle write
// (the caller already gathered several frames into frame).
func (q *writeQueue) writeGather(frame []byte, timeout time.Duration, gather bool) (failed bool, err error) {
	q.mu.Lock()
	for q.err == nil && q.pending != nil && q.queued+len(frame) > maxQueuedBytes {
		q.room.Wait()
	}
	if q.err != nil {
		err := q.err
		q.mu.Unlock()
		return false, err
	}
	if !q.busy {
		q.busy = true
		yield := gather && q.skipYields == 0
		if gather && !yield {
			q.skipYields--
		}
		q.mu.Unlock()
		if !yield {
			return q.release(q.writeOut(timeout, frame, nil))
		}
		return q.release(q.writeIdle(timeout, frame))
	}
	b := q.pending
	lead := b == nil
	if lead {
		b = &writeBatch{bufs: make([][]byte, 0, 8), turn: make(chan struct{}), done: make(chan struct{})}
		q.pending = b
	}
	b.bufs = append(b.bufs, frame)
	q.queued += len(frame)
	q.mu.Unlock()
	if !lead {
		<-b.done
		return false, b.err
	}
	<-b.turn
	if b.absorbed || b.err != nil {
		<-b.done
		return false, b.err
	}
	// release detached b from pending before closing turn: nobody
	// appends to it any more, and this goroutine now owns the write.
	werr := q.writeOut(timeout, nil, b.bufs)
	q.complete(b, werr)
	return q.release(werr)
}

// writeIdle is the write of a caller that found the queue idle (it holds
// busy): yield, then write frame with whatever was queued meanwhile.
// The absorbed batch is completed here; its leader only waits for done.
func (q *writeQueue) writeIdle(timeout time.Duration, frame []byte) error {
	// Yield again while each yield brings more frames, up to maxYields.
	seen := 0
	for range maxYields {
		runtime.Gosched()
		q.mu.Lock()
		n := 0
		if q.pending != nil {
			n = len(q.pending.bufs)
		}
		q.mu.Unlock()
		if n == seen {
			break
		}
		seen = n
	}
	q.mu.Lock()
	b := q.pending
	if b == nil {
		q.skipYields = yieldBackoff
		q.mu.Unlock()
		return q.writeOut(timeout, frame, nil)
	}
	q.pending, q.queued = nil, 0
	q.room.Broadcast()
	q.mu.Unlock()
	// frame entered the queue first (it took busy before b existed).
	bufs := make([][]byte, 0, len(b.bufs)+1)
	bufs = append(append(bufs, frame), b.bufs...)
	werr := q.writeOut(timeout, nil, bufs)
	b.absorbed = true
	q.complete(b, werr)
	close(b.turn)
	return werr
}

// tryWrite writes frame within timeout, for a write that may be dropped
// (a notification) and must not wait on a peer that stops reading: it
// waits for the queue to be idle until the deadline (ErrWriteBusy when it
// never is; nothing written), then writes frame alone with the rest of
// the time. ErrTimeout means the peer took no byte of frame: the stream is
// intact and the queue usable. A frame cut short (part written when the
// deadline passed), or a timeout on a stream that cannot resume after one
// (TLS), fails the queue like any failed write: failed is true and the
// caller closes the connection.
func (q *writeQueue) tryWrite(frame []byte, timeout time.Duration) (failed bool, err error) {
	deadline := time.Now().Add(timeout)
	wake := time.AfterFunc(timeout, func() {
		q.mu.Lock()
		q.room.Broadcast()
		q.mu.Unlock()
	})
	defer wake.Stop()
	q.mu.Lock()
	for q.err == nil && q.busy && time.Now().Before(deadline) {
		q.room.Wait() // signalled by release, by fail and by wake
	}
	if q.err != nil {
		err := q.err
		q.mu.Unlock()
		return false, err
	}
	if q.busy {
		q.mu.Unlock()
		return false, fmt.Errorf("%w: %s for %v", ErrWriteBusy, q.nc.RemoteAddr(), timeout)
	}
	q.busy = true
	q.mu.Unlock()
	_ = q.nc.SetWriteDeadline(deadline)
	n, werr := q.nc.Write(frame)
	var ne net.Error
	if werr != nil && n == 0 && q.vectored && errors.As(werr, &ne) && ne.Timeout() {
		// Nothing of frame was written: the stream is as it was.
		q.release(nil)
		return false, fmt.Errorf("%w: write to %s: the peer took nothing in %v", ErrTimeout, q.nc.RemoteAddr(), timeout)
	}
	if werr != nil {
		werr = fmt.Errorf("%w: write to %s: %w", ErrClosed, q.nc.RemoteAddr(), werr)
	}
	return q.release(werr)
}

// complete records the outcome of the write that carried b's frames and
// releases b's writers: on failure the queue's sticky error is b's.
func (q *writeQueue) complete(b *writeBatch, werr error) {
	if werr != nil {
		q.mu.Lock()
		if q.err == nil {
			q.err = werr
		}
		b.err = q.err
		q.mu.Unlock()
	}
	close(b.done)
}

// writeOut writes one frame or a batch of frames. Only the writer holding
// busy calls it.
func (q *writeQueue) writeOut(timeout time.Duration, frame []byte, bufs [][]byte) error {
	if timeout > 0 {
		_ = q.nc.SetWriteDeadline(time.Now().Add(timeout))
	}
	var err error
	switch {
	case frame != nil:
		_, err = q.nc.Write(frame)
	case len(bufs) == 1:
		_, err = q.nc.Write(bufs[0])
	case q.vectored:
		v := net.Buffers(bufs)
		_, err = v.WriteTo(q.nc)
	default:
		// TLS and other wrappers write net.Buffers one by one: copy into
		// one buffer so a batch is one write (and few TLS records). The
		// buffer is pooled, not kept, so idle connections hold none.
		bp := framePool.Get().(*[]byte)
		flat := (*bp)[:0]
		for _, f := range bufs {
			flat = append(flat, f...)
		}
		_, err = q.nc.Write(flat)
		if cap(flat) <= maxPooledFrame {
			*bp = flat[:0]
			framePool.Put(bp)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: write to %s: %w", ErrClosed, q.nc.RemoteAddr(), err)
	}
	return nil
}

// release ends the write of the goroutine holding busy: it records werr,
// then hands the pending batch to its leader, or fails it if the queue has
// failed. It returns werr (or the sticky error) and whether werr was this
// write's own failure.
func (q *writeQueue) release(werr error) (bool, error) {
	q.mu.Lock()
	if werr != nil && q.err == nil {
		q.err = werr
	}
	ferr := q.err
	next := q.pending
	q.pending, q.queued = nil, 0
	if next == nil || ferr != nil {
		q.busy = false
	}
	q.room.Broadcast()
	q.mu.Unlock()
	if next != nil {
		if ferr != nil {
			next.err = ferr
			close(next.done)
		}
		close(next.turn) // the leader writes, or sees next.err
	}
	if werr != nil {
		return true, ferr
	}
	return false, nil
}

// fail makes queued and later writes fail with err (the connection is
// closing). A write in progress is left to finish or fail on its own.
func (q *writeQueue) fail(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.room.Broadcast()
	q.mu.Unlock()
}
