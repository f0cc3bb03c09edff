package commitlog

import (
	"errors"

	"github.com/tidemq/tide/broker/internal/store/segment"
)

// The pre-toucher (ASYNC_FLUSH, Options.PretouchAhead > 0) keeps the
// pages just past the written end of the commit log prefaulted, so that
// Append copies into pages that are already in the page cache and mapped
// writable. Without it, the first copy into each fresh page of a
// fallocated segment takes a page fault under the append lock: the kernel
// allocates and zeroes a page-cache page and runs the file system's
// page_mkwrite. Populating a whole range with one
// madvise(MADV_POPULATE_WRITE) costs a fraction of that CPU in total
// (docs/store.md, "Commit log pre-touch"), and it runs off the append
// lock. RocketMQ's equivalent is warming the mapped file ahead in its
// allocate-ahead service, which writes zeros over all of it.
//
//	segment (MapWrite, fallocated)
//	+---------------------+==================+------------------------+
//	| records (written)   | prefaulted zeros | not yet touched        |
//	+---------------------+==================+------------------------+
//	                      ^ MaxOffset        ^ touched (<= MaxOffset + PretouchAhead)
//
// Appends wake the goroutine (without blocking) once the written end comes
// within half the window of the touched offset; it then populates up to
// MaxOffset + PretouchAhead, never past the end of the last segment. The
// next segment's head is prefaulted when the queue creates it in the
// background (segment.QueueOptions.PrefaultHead), so a roll-over does not
// start cold. Prefaulting writes nothing (the pages keep the zeros the
// file holds), so recovery and truncation see exactly what they would
// without it.
//
// The window is small on purpose (commitLogPretouchAhead, default 1 MiB):
// prefaulted pages are dirty, so the periodic flush's fdatasync writes
// back the ones the writer has not reached yet (as zeros) and
// write-protects them, and the writer then faults on them once more. At
// the 10-20 MB/s of the (b) benchmark a 4 MiB window, of the 5-10 MB a
// 500 ms flush interval covers, cost the broker more CPU per message than
// it saved; 1 MiB saved about a tenth (docs/benchmarks/analysis.md,
// "Commit log pre-touch").

// wantTouch wakes the pre-toucher when the written end, now end, came
// within half the window of the touched offset, or when the touched offset
// lies beyond the window (a truncation moved the end back).
func (l *Log) wantTouch(end int64) {
	a := l.opts.PretouchAhead
	if a <= 0 || l.touchOff.Load() {
		return
	}
	if t := l.touched.Load(); end+a/2 > t || t > end+a {
		select {
		case l.touch <- struct{}{}:
		default:
		}
	}
}

// pretouch is the pre-toucher goroutine (started by Start, stopped by
// Shutdown).
func (l *Log) pretouch() {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		case <-l.touch:
		}
		if !l.touchAhead() {
			return
		}
	}
}

// touchAhead prefaults from the touched offset (or the written end, if the
// writer overtook it) to PretouchAhead past the written end, segment by
// segment. It returns false when prefaulting is unsupported.
func (l *Log) touchAhead() bool {
	a := l.opts.PretouchAhead
	for {
		end := l.q.MaxOffset()
		from := l.touched.Load()
		if from < end || from > end+a {
			from = end // overtaken, or truncated back
		}
		if from >= end+a {
			return true
		}
		f := l.q.Find(from)
		if f == nil {
			// from is the end of the last segment: the next one is not in
			// use yet (its head is prefaulted at creation).
			l.touched.Store(from)
			return true
		}
		to := min(end+a, f.Base()+f.Size())
		err := f.Prefault(from-f.Base(), to-from)
		f.Release()
		switch {
		case errors.Is(err, segment.ErrPrefaultUnsupported):
			l.touchOff.Store(true)
			l.log.Info("commit log pre-touch off: the kernel has no MADV_POPULATE_WRITE (Linux 5.14)")
			return false
		case err != nil && !errors.Is(err, segment.ErrClosed):
			// Advisory: the writer faults the pages itself.
			l.log.Debug("commit log pre-touch failed", "offset", from, "err", err)
		}
		l.touched.Store(to)
	}
}
