package store

import (
	"strings"
	"testing"
	"time"
)

// A round that is not thorough flushes only the queues with at least
// flushConsumeQueueLeastPages dirty pages and keeps the checkpoint's logics
// offset; a thorough round flushes every queue and moves it.
func TestFlushLogicsLeastPages(t *testing.T) {
	c := testConfig(t)
	c.MappedFileSizeCommitLog = 1 << 20
	c.MappedFileSizeConsumeQueue = 20 * 2000 // 40 KB: room for 2 dirty pages
	c.FlushIntervalConsumeQueue = int(time.Hour.Milliseconds())
	c.FlushConsumeQueueLeastPages = 2
	s := openStore(t, c)

	put(t, s, newMsg("Quiet", 0, "one", nil)) // 20 bytes dirty: below 2 pages
	for range 500 {                           // 10,000 bytes dirty: above
		put(t, s, newMsg("Busy", 0, strings.Repeat("x", 10), nil))
	}
	waitDispatched(t, s)
	quiet, busy := s.queue("Quiet", 0, false), s.queue("Busy", 0, false)
	before := s.lastCP

	if err := s.flushLogics(false); err != nil {
		t.Fatal(err)
	}
	if quiet.DirtyBytes() == 0 {
		t.Error("a queue with less than flushConsumeQueueLeastPages dirty was flushed by a light round")
	}
	if busy.DirtyBytes() != 0 {
		t.Errorf("a queue with %d bytes dirty was not flushed", busy.DirtyBytes())
	}
	// The quiet queue's unflushed unit (the first record, at commit log
	// offset 0) holds the logics offset back.
	if s.lastCP.LogicsOffset != 0 {
		t.Errorf("a light round moved the logics offset %d -> %d past an unflushed unit", before.LogicsOffset, s.lastCP.LogicsOffset)
	}

	// Flush the commit log to its end, so the expected offset is not a
	// moving target.
	flushCommitLog(t, s)
	if err := s.flushLogics(true); err != nil {
		t.Fatal(err)
	}
	if quiet.DirtyBytes() != 0 {
		t.Error("a thorough round left a queue unflushed")
	}
	if want := s.cl.MaxOffset(); s.lastCP.LogicsOffset != want {
		t.Errorf("thorough round: logics offset %d, want %d", s.lastCP.LogicsOffset, want)
	}
}

// With every quiet queue flushed, a light round moves the logics offset
// to the busy queues' end.
func TestFlushLogicsLightRoundAdvances(t *testing.T) {
	c := testConfig(t)
	c.MappedFileSizeCommitLog = 1 << 20
	c.MappedFileSizeConsumeQueue = 20 * 2000
	c.FlushIntervalConsumeQueue = int(time.Hour.Milliseconds())
	c.FlushConsumeQueueLeastPages = 2
	s := openStore(t, c)
	for range 500 {
		put(t, s, newMsg("Busy", 0, strings.Repeat("x", 10), nil))
	}
	waitDispatched(t, s)
	flushCommitLog(t, s)
	if err := s.flushLogics(false); err != nil {
		t.Fatal(err)
	}
	if got, want := s.lastCP.LogicsOffset, s.cl.MaxOffset(); got != want {
		t.Errorf("logics offset %d, want %d", got, want)
	}
}

// flushCommitLog flushes the commit log to its end itself. Waiting for
// the async flusher instead raced its rules: it leaves a tail under
// flushCommitLogLeastPages (4 pages) dirty until flushCommitLogThoroughInterval
// (10 s) after its last flush, and when the 500 puts spanned several of
// its 10 ms rounds (-race, a loaded machine) the wait of 10 s ran out
// first ("commit log flushed to 48405 of 52500").
func flushCommitLog(t *testing.T, s *Store) {
	t.Helper()
	if err := s.cl.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := s.cl.FlushedOffset(), s.cl.MaxOffset(); got != want {
		t.Fatalf("commit log flushed to %d of %d", got, want)
	}
}
