package commitlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/broker/internal/store/segment"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Sentinel errors of the commit log.
var (
	// ErrTooLarge: a record (or batch) cannot fit in one segment.
	ErrTooLarge = errors.New("commit log: record larger than a segment")
	// ErrOffsetRemoved: the offset lies before the oldest retained segment.
	ErrOffsetRemoved = errors.New("commit log: offset already removed")
	// ErrOffsetBeyond: the offset is past the written end.
	ErrOffsetBeyond = errors.New("commit log: offset beyond written data")
	// ErrFlushTimeout: a synchronous flush did not finish in time.
	ErrFlushTimeout = errors.New("commit log: flush timeout")
	// ErrClosed: the log is closed.
	ErrClosed = errors.New("commit log: closed")
	// ErrWrongOffset: a replicated append does not start at the log's end.
	ErrWrongOffset = errors.New("commit log: raw append not at the end")
)

// Options configure a Log. Use store.Config for the broker.conf names.
type Options struct {
	Dir        string
	FileSize   int64
	SyncFlush  bool          // SYNC_FLUSH: group commit, waiters released after fdatasync
	Interval   time.Duration // ASYNC_FLUSH: flushIntervalCommitLog
	LeastPages int           // ASYNC_FLUSH: flushCommitLogLeastPages (4 KiB pages)
	Thorough   time.Duration // ASYNC_FLUSH: flushCommitLogThoroughInterval, flush any amount
	Warm       bool          // zero-fill new segments (warmMapedFileEnable)
	// PretouchAhead (ASYNC_FLUSH only; 0 = off) keeps the commit log pages
	// from the written end to this many bytes past it prefaulted by a
	// background goroutine (segment.File.Prefault), so appends copy into
	// pages that are already there instead of faulting on each new page
	// under the append lock. See pretouch.go.
	PretouchAhead int64
	Logger        *slog.Logger
	OnAppend      func() // called after each append, outside the lock (dispatcher wake-up)
}

// Log is the commit log. All methods are safe for concurrent use; Append
// and AppendRaw serialize on one lock, reads never block on it.
type Log struct {
	opts Options
	q    *segment.Queue
	log  *slog.Logger

	mu      sync.Mutex // append lock
	cond    *sync.Cond // on mu: a staged write finished
	closed  bool
	st      stage  // SYNC_FLUSH: runs not yet written
	spare   []byte // the other stage buffer
	writing bool   // the flusher is writing a stage outside mu
	werr    error  // a failed write: the log refuses appends until reopened

	flushed  atomic.Int64
	fmu      sync.Mutex
	fdone    chan struct{} // closed and replaced after every flush (and by the watchdog)
	flushing bool          // a flush leader is running (under fmu)
	rounds   uint64        // flushes ended (under fmu)
	freq     chan struct{} // cap 1: a flush is wanted
	ferr     atomic.Pointer[error]
	stop     chan struct{}
	wg       sync.WaitGroup
	started  bool
	touched  atomic.Int64  // pre-toucher: prefaulted up to this offset (pretouch.go)
	touchOff atomic.Bool   // pre-toucher stopped (kernel without MADV_POPULATE_WRITE)
	touch    chan struct{} // cap 1: the pre-toucher should catch up
	Flushes  atomic.Int64  // fdatasync rounds (group commits)
	Appends  atomic.Int64  // append calls
	FlushDur atomic.Int64  // total nanoseconds spent in flushes
}

// Open maps the segments in opts.Dir. The log is not usable for appends
// until Recover has set its end.
func Open(opts Options) (*Log, error) {
	if opts.FileSize < 4096 {
		return nil, fmt.Errorf("commit log: file size %d below 4096", opts.FileSize)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Interval <= 0 {
		opts.Interval = 500 * time.Millisecond
	}
	if opts.Thorough <= 0 {
		opts.Thorough = 10 * time.Second
	}
	mode := segment.MapWrite
	if opts.SyncFlush {
		mode = segment.PWrite // see the segment package comment
	}
	if opts.SyncFlush || opts.PretouchAhead < 0 {
		opts.PretouchAhead = 0 // SYNC_FLUSH writes with pwrite, not through the mapping
	}
	opts.PretouchAhead = min(opts.PretouchAhead, opts.FileSize)
	q, err := segment.OpenQueue(opts.Dir, segment.QueueOptions{FileSize: opts.FileSize, Warm: opts.Warm, Preallocate: true, Mode: mode, PrefaultHead: opts.PretouchAhead})
	if err != nil {
		return nil, err
	}
	l := &Log{opts: opts, q: q, log: opts.Logger, fdone: make(chan struct{}), freq: make(chan struct{}, 1), stop: make(chan struct{}), touch: make(chan struct{}, 1)}
	l.cond = sync.NewCond(&l.mu)
	return l, nil
}

// Start starts the flush goroutine (group commit or periodic).
func (l *Log) Start() {
	l.flushed.Store(l.q.FlushedOffset())
	l.started = true
	l.wg.Add(1)
	if l.opts.SyncFlush {
		go l.groupCommit()
	} else {
		go l.periodicFlush()
	}
	if l.opts.PretouchAhead > 0 {
		l.touched.Store(l.q.MaxOffset())
		l.wg.Add(1)
		go l.pretouch()
		l.wantTouch(l.q.MaxOffset())
	}
}

// WaitPreallocated blocks until the next segment, created in the
// background, is ready (benchmarks use it to measure steady state).
func (l *Log) WaitPreallocated() { l.q.WaitPreallocated() }

// FileSize returns the segment size.
func (l *Log) FileSize() int64 { return l.opts.FileSize }

// MinOffset returns the first retained offset.
func (l *Log) MinOffset() int64 { return l.q.MinOffset() }

// MaxOffset returns the end of the written (readable) data.
func (l *Log) MaxOffset() int64 { return l.q.MaxOffset() }

// FlushedOffset returns the end of the data known durable.
func (l *Log) FlushedOffset() int64 { return l.flushed.Load() }

// Segments returns a snapshot of the segment files (not acquired).
func (l *Log) Segments() []*segment.File { return l.q.Files() }

// Append writes data, one or more complete stored records back to back,
// as one contiguous run at the end of the log. Under the append lock it
// calls prepare with the physical offset the run will start at; prepare
// must patch each record's offsets (and anything else that must follow log
// order, like queue offsets and store timestamps) into data. It returns the
// run's start offset. Append blocks only on the lock and, when a segment
// must be created and the preallocated one is not ready, on file creation.
//
// ASYNC_FLUSH copies the run into the mapped segment: it is readable when
// Append returns. SYNC_FLUSH stages it in memory and the group-commit
// goroutine writes every staged run with one pwrite before each fdatasync
// (group write + group commit): it becomes readable then, and callers wait
// for it with WaitFlushed anyway.
func (l *Log) Append(data []byte, prepare func(phy int64, data []byte) error) (int64, error) {
	n := int64(len(data))
	if n+protocol.BlankRecordSize > l.opts.FileSize {
		return 0, fmt.Errorf("%w: %d bytes, segment %d", ErrTooLarge, n, l.opts.FileSize)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	if l.werr != nil {
		l.mu.Unlock()
		return 0, l.werr
	}
	f, pos, err := l.reserve(n)
	if err != nil {
		l.mu.Unlock()
		return 0, err
	}
	phy := f.Base() + pos
	if prepare != nil {
		if err := prepare(phy, data); err != nil {
			l.mu.Unlock()
			return 0, err
		}
	}
	if l.opts.SyncFlush {
		if l.st.f == nil {
			l.st.f, l.st.off = f, pos
		}
		l.st.buf = append(l.st.buf, data...)
		l.mu.Unlock()
		l.Appends.Add(1)
		return phy, nil
	}
	if err := f.WriteAt(data, pos); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	f.SetWrotePosition(pos + n)
	l.mu.Unlock()
	l.Appends.Add(1)
	l.wantTouch(phy + n)
	if l.opts.OnAppend != nil {
		l.opts.OnAppend()
	}
	return phy, nil
}

// stage holds SYNC_FLUSH runs not yet written: buf goes to f at off.
type stage struct {
	f   *segment.File
	off int64
	buf []byte
}

// tail returns where the next run goes in f, staged bytes included.
// Called with mu held.
func (l *Log) tail(f *segment.File) int64 {
	if l.st.f == f {
		return l.st.off + int64(len(l.st.buf))
	}
	return f.WrotePosition()
}

// reserve returns the segment and position for the next n bytes, writing
// a blank filler and rolling over when they do not fit. Called with mu
// held; it may release it while waiting for staged data to be written.
func (l *Log) reserve(n int64) (*segment.File, int64, error) {
	for {
		f := l.q.Last()
		if f == nil {
			f, err := l.q.Ensure(0)
			return f, 0, err
		}
		pos := l.tail(f)
		if pos+n+protocol.BlankRecordSize <= f.Size() {
			return f, pos, nil
		}
		// Roll over: everything staged for f must be written before the
		// filler, so that f ends up complete.
		if err := l.writeStageLocked(); err != nil {
			return nil, 0, err
		}
		if pos != f.WrotePosition() {
			continue // the lock was released while waiting; look again
		}
		if rest := f.Size() - pos; rest > 0 {
			if err := f.WriteAt(protocol.AppendBlank(make([]byte, 0, 8), int32(rest)), pos); err != nil {
				return nil, 0, err
			}
			f.SetWrotePosition(f.Size())
		}
		l.st.f = nil
		nf, err := l.q.Ensure(f.Base() + f.Size())
		return nf, 0, err
	}
}

// writeStageLocked writes the staged runs synchronously. Called with mu
// held; waits (releasing mu) while the flusher is writing.
func (l *Log) writeStageLocked() error {
	for l.writing {
		l.cond.Wait()
	}
	if l.werr != nil {
		return l.werr
	}
	if len(l.st.buf) == 0 {
		return nil
	}
	if err := l.st.f.WriteAt(l.st.buf, l.st.off); err != nil {
		l.werr = err
		return err
	}
	l.st.off += int64(len(l.st.buf))
	l.st.f.SetWrotePosition(l.st.off)
	l.st.buf = l.st.buf[:0]
	if l.opts.OnAppend != nil {
		l.opts.OnAppend()
	}
	return nil
}

// writeStage writes what is staged with one pwrite, outside the append
// lock so appenders keep staging meanwhile, and publishes it to readers.
func (l *Log) writeStage() error {
	l.mu.Lock()
	for l.writing {
		l.cond.Wait()
	}
	if l.werr != nil || len(l.st.buf) == 0 {
		err := l.werr
		l.mu.Unlock()
		return err
	}
	l.writing = true
	f, off, buf := l.st.f, l.st.off, l.st.buf
	n := int64(len(buf))
	l.st.off += n
	l.st.buf, l.spare = l.spare[:0], nil
	l.mu.Unlock()

	// Write up to the end of the last page: the file holds zeros past the
	// written end (zero-filled or fallocated, and recovery clears a torn
	// tail), and a page written in part that is not cached (segments are
	// zero-filled around the page cache) would be read from disk first.
	// The next group overwrites the padding.
	if pad := (4096 - (off+n)%4096) % 4096; pad > 0 && off+n+pad <= f.Size() {
		buf = append(buf, zeroPage[:pad]...)
	}
	err := f.WriteAt(buf, off)

	l.mu.Lock()
	if err != nil {
		l.werr = err
	} else {
		f.SetWrotePosition(off + n)
	}
	l.spare = buf[:0]
	l.writing = false
	l.cond.Broadcast()
	l.mu.Unlock()
	if err == nil && l.opts.OnAppend != nil {
		l.opts.OnAppend()
	}
	return err
}

// AppendRaw appends bytes replicated from a master's commit log (records
// and blank fillers, as they lie there) at offset, which must equal
// MaxOffset (or any segment-aligned offset when the log is empty). The
// master's segment size must equal this log's.
func (l *Log) AppendRaw(offset int64, data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.writeStageLocked(); err != nil {
		return err
	}
	l.st.f = nil
	f := l.q.Last()
	if f == nil {
		if offset%l.opts.FileSize != 0 {
			return fmt.Errorf("%w: %d into an empty log", ErrWrongOffset, offset)
		}
		var err error
		if f, err = l.q.Ensure(offset); err != nil {
			return err
		}
	}
	if end := f.Base() + f.WrotePosition(); end != offset {
		return fmt.Errorf("%w: %d, end is %d", ErrWrongOffset, offset, end)
	}
	for len(data) > 0 {
		if f.Full() {
			var err error
			if f, err = l.q.Ensure(f.Base() + f.Size()); err != nil {
				return err
			}
		}
		pos := f.WrotePosition()
		k := min(int64(len(data)), f.Size()-pos)
		if err := f.WriteAt(data[:k], pos); err != nil {
			return err
		}
		f.SetWrotePosition(pos + k)
		data = data[k:]
	}
	l.wantTouch(f.Base() + f.WrotePosition())
	if l.opts.OnAppend != nil {
		l.opts.OnAppend()
	}
	return nil
}

// Read appends n bytes at offset to dst. The range must lie in one segment
// below the written end. Safe concurrently with appends and retention.
func (l *Log) Read(dst []byte, offset int64, n int) ([]byte, error) {
	err := l.View(offset, func(b []byte) error {
		if n > len(b) {
			return fmt.Errorf("%w: %d bytes at %d", ErrOffsetBeyond, n, offset)
		}
		dst = append(dst, b[:n]...)
		return nil
	})
	return dst, err
}

// View calls fn with the written bytes of the segment holding offset,
// starting at offset. The slice aliases the mapping and is valid only
// during the call; fn must not retain or modify it.
func (l *Log) View(offset int64, fn func(b []byte) error) error {
	f := l.q.Find(offset)
	if f == nil {
		if offset < l.q.MinOffset() {
			return fmt.Errorf("%w: %d < %d", ErrOffsetRemoved, offset, l.q.MinOffset())
		}
		return fmt.Errorf("%w: %d", ErrOffsetBeyond, offset)
	}
	defer f.Release()
	pos := offset - f.Base()
	w := f.WrotePosition()
	if pos >= w {
		return fmt.Errorf("%w: %d (end %d)", ErrOffsetBeyond, offset, f.Base()+w)
	}
	return fn(f.Data()[pos:w])
}

// ReadRecord appends the whole stored record at offset to dst, checking
// its size and magic code (not its CRC).
func (l *Log) ReadRecord(dst []byte, offset int64) ([]byte, error) {
	err := l.View(offset, func(b []byte) error {
		size, magic, err := protocol.PeekRecord(b)
		if err != nil {
			return err
		}
		if magic != protocol.MessageMagic || size < protocol.RecordMinSize || int(size) > len(b) {
			return fmt.Errorf("%w: no record at commit log offset %d", protocol.ErrMalformed, offset)
		}
		dst = append(dst, b[:size]...)
		return nil
	})
	return dst, err
}

// ReadRaw returns a copy of up to max bytes of the log from offset, not
// crossing a segment end (for replication).
func (l *Log) ReadRaw(offset int64, max int) ([]byte, error) {
	var out []byte
	err := l.View(offset, func(b []byte) error {
		out = append([]byte(nil), b[:min(len(b), max)]...)
		return nil
	})
	return out, err
}

// NextSegment returns the base of the segment after the one holding offset.
func (l *Log) NextSegment(offset int64) int64 {
	return offset - offset%l.opts.FileSize + l.opts.FileSize
}

// WaitFlushed blocks until everything up to end is durable, the timeout
// passes (ErrFlushTimeout) or ctx ends. Group commit, leader/follower: if
// no flush is running the caller runs one itself (writing every staged run
// with one pwrite, then fdatasync), covering everything appended so far;
// otherwise it waits for the running one and checks again. So waiters that
// arrive during an fdatasync share the next one. A leader blocks for its
// flush even past the timeout.
//
// Followers have no timer each: a flush that ends wakes all of them with
// one channel close, and the background goroutine (Start) closes the
// channel early while a flush runs longer than a tick, so that they can
// check their deadline. A follower therefore gets ErrFlushTimeout up to
// two ticks (20 ms) after the timeout. That goroutine is the SYNC_FLUSH
// one: without it (ASYNC_FLUSH, or before Start) followers wait until the
// running flush ends.
func (l *Log) WaitFlushed(ctx context.Context, end int64, timeout time.Duration) error {
	var since time.Time // when this caller first waited for another's flush
	for {
		if l.flushed.Load() >= end {
			return nil
		}
		if e := l.ferr.Load(); e != nil {
			return *e
		}
		l.fmu.Lock()
		if !l.flushing {
			l.flushing = true
			l.fmu.Unlock()
			l.gather()
			err := l.doFlush()
			l.endFlush()
			if err != nil {
				return err
			}
			continue
		}
		done := l.fdone
		l.fmu.Unlock()
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) >= timeout {
			return ErrFlushTimeout
		}
		if cd := ctx.Done(); cd != nil {
			select {
			case <-done:
			case <-cd:
				return ctx.Err()
			}
		} else {
			<-done
		}
	}
}

// gatherYields bounds how often a flush leader yields to let appenders
// stage before it takes the stage. Measured with 64 writers (1 KiB,
// docs/store.md): 1 yield gave groups of ~40 messages, 4 gave ~50 at a
// lower CPU cost per message, 16 gave ~54 but longer rounds.
const gatherYields = 4

// gather lets the appenders the last flush woke stage their records
// before this flush takes the stage, so it carries them too: it yields
// while appends keep arriving, up to gatherYields times. The appenders
// are runnable already; yielding only lets them run first.
func (l *Log) gather() {
	for i := 0; i < gatherYields; i++ {
		n := l.Appends.Load()
		runtime.Gosched()
		if l.Appends.Load() == n {
			return
		}
	}
}

// Flush makes everything written durable now. It waits for a flush in
// progress and then runs its own.
func (l *Log) Flush() error {
	l.fmu.Lock()
	for l.flushing {
		done := l.fdone
		l.fmu.Unlock()
		<-done
		l.fmu.Lock()
	}
	l.flushing = true
	l.fmu.Unlock()
	err := l.doFlush()
	l.endFlush()
	return err
}

// endFlush ends the flush this goroutine led and wakes the waiters.
func (l *Log) endFlush() {
	l.fmu.Lock()
	l.flushing = false
	l.rounds++
	close(l.fdone)
	l.fdone = make(chan struct{})
	l.fmu.Unlock()
}

// doFlush writes the staged runs and fdatasyncs. Only the flush leader
// (flushing set) calls it.
func (l *Log) doFlush() error {
	start := time.Now()
	if err := l.writeStage(); err != nil {
		l.ferr.Store(&err)
		return err
	}
	before := l.flushed.Load()
	end, err := l.q.Flush()
	if err != nil {
		l.ferr.Store(&err)
		return err
	}
	if end > before {
		l.FlushDur.Add(int64(time.Since(start)))
		l.Flushes.Add(1)
	}
	for {
		cur := l.flushed.Load()
		if end <= cur || l.flushed.CompareAndSwap(cur, end) {
			break
		}
	}
	return nil
}

func (l *Log) staged() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.st.buf) > 0
}

// groupCommit is the SYNC_FLUSH background flusher. Waiting appenders
// lead their own group commits (WaitFlushed); this goroutine only flushes,
// every 10 ms, what nobody waits for (WAIT=false messages), so that it
// becomes readable and durable. It runs those flushes on a goroutine of
// their own, one at a time, so that its ticks go on while one is stuck
// in fdatasync: the ticks are the followers' only timer (wakeStuck), and
// a follower must get ErrFlushTimeout even when the stuck flush is this
// goroutine's.
func (l *Log) groupCommit() {
	defer l.wg.Done()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	seen := ^uint64(0)
	var bg sync.WaitGroup
	defer bg.Wait()
	var running atomic.Bool
	for {
		select {
		case <-l.stop:
			return
		case <-l.freq:
		case <-tick.C:
			if l.wakeStuck(&seen) {
				// A flush is running: it or the next one covers the
				// staged data; do not queue behind a stuck fdatasync.
				continue
			}
			if l.q.MaxOffset() <= l.flushed.Load() && !l.staged() {
				continue
			}
		}
		if !running.CompareAndSwap(false, true) {
			continue // the previous background flush still runs
		}
		bg.Add(1)
		go func() {
			defer bg.Done()
			defer running.Store(false)
			if err := l.Flush(); err != nil {
				l.log.Error("commit log flush failed", "err", err)
			}
		}()
	}
}

// wakeStuck reports whether a flush is running. When the same flush was
// already running at the previous call (a tick ago), it wakes its
// followers, which then check their timeouts and wait again: the
// followers' only timer. seen carries the flush count between calls.
func (l *Log) wakeStuck(seen *uint64) bool {
	l.fmu.Lock()
	defer l.fmu.Unlock()
	if !l.flushing {
		*seen = ^uint64(0)
		return false
	}
	if *seen == l.rounds {
		close(l.fdone)
		l.fdone = make(chan struct{})
	}
	*seen = l.rounds
	return true
}

// periodicFlush is the ASYNC_FLUSH flusher (RocketMQ FlushRealTimeService):
// every Interval it flushes when at least LeastPages pages are dirty, and
// any amount once Thorough has passed since the last full flush.
func (l *Log) periodicFlush() {
	defer l.wg.Done()
	tick := time.NewTicker(l.opts.Interval)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		case <-l.freq: // an explicit WaitFlushed in async mode
			last = time.Time{}
		}
		dirty := l.q.MaxOffset() - l.flushed.Load()
		if dirty <= 0 {
			continue
		}
		if dirty < int64(l.opts.LeastPages)*4096 && time.Since(last) < l.opts.Thorough {
			continue
		}
		if err := l.Flush(); err != nil {
			l.log.Error("commit log flush failed", "err", err)
		}
		last = time.Now()
	}
}

// Shutdown refuses new appends, waits for the one in progress, stops the
// flusher and flushes everything. It does not unmap; call Close after.
func (l *Log) Shutdown() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	// Flush before stopping so that waiters are released with success.
	err := l.Flush()
	if l.started {
		close(l.stop)
		l.wg.Wait()
		l.started = false
	}
	return errors.Join(err, l.Flush())
}

// Close unmaps the segments (after readers release them). Call Shutdown
// first to flush.
func (l *Log) Close() { l.q.Close() }

// RemoveFront deletes up to n of the oldest segments (never the current
// one). Readers in flight keep valid mappings until they finish.
func (l *Log) RemoveFront(n int) int { return l.q.RemoveFront(n) }

// Truncate cuts the log back to end, a record boundary at or below
// MaxOffset (a replica dropping a tail the new master never had, RocketMQ
// 5's truncateInvalidMsg/truncateDirtyFiles): staged runs are written,
// the rest of end's segment is zeroed and flushed, later segments are
// deleted. Appends wait for it. Readers of the removed range get errors
// or zeros; the caller (store.Truncate) keeps its indexes consistent.
func (l *Log) Truncate(end int64) error {
	if err := l.Flush(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.writeStageLocked(); err != nil {
		return err
	}
	l.st.f = nil
	if end >= l.q.MaxOffset() {
		return nil
	}
	if end < l.q.MinOffset() {
		return fmt.Errorf("%w: truncate to %d below the first retained offset %d", ErrOffsetRemoved, end, l.q.MinOffset())
	}
	l.zeroTail(end, l.opts.FileSize)
	l.q.Truncate(end)
	if f := l.q.Find(end); f != nil {
		f.SetWrotePosition(end - f.Base())
		f.SetFlushedPosition(end - f.Base())
		f.Release()
	}
	l.flushed.Store(end)
	l.touched.Store(end) // the pre-toucher starts again from the new end
	return nil
}
