package store

import (
	"context"
	"testing"
)

// TestAppendedWake: an append wakes the dispatcher unless an append made
// with DeferDispatch is in progress (its caller's Dispatch covers it).
func TestAppendedWake(t *testing.T) {
	for _, tt := range []struct {
		name      string
		deferring int32
		wantWake  bool
	}{
		{name: "plain", wantWake: true},
		{name: "deferred in progress", deferring: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &Store{dwake: make(chan struct{}, 1)}
			s.deferring.Store(tt.deferring)
			s.appended()
			if woken := len(s.dwake) == 1; woken != tt.wantWake {
				t.Fatalf("woken %v, want %v", woken, tt.wantWake)
			}
		})
	}
}

// TestDispatchOnCaller: records put with DeferDispatch are dispatched by
// Dispatch on the caller's goroutine; with runMu held elsewhere Dispatch
// does not wait for it and the dispatcher takes the records once it is
// free; after Close it does nothing.
func TestDispatchOnCaller(t *testing.T) {
	c := testConfig(t)
	c.FlushIntervalConsumeQueue = 3_600_000 // the flush goroutine never holds runMu here
	s := openStore(t, c)
	ctx := DeferDispatch(context.Background())
	for i := range 5 {
		if _, err := s.PutMessage(ctx, newMsg("T", 0, "m", nil)); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if s.deferring.Load() != 0 {
		t.Fatalf("deferring %d after the puts", s.deferring.Load())
	}
	s.Dispatch()
	// If the dispatcher held runMu (a poll), it dispatched everything
	// before releasing it.
	s.runMu.Lock()
	s.runMu.Unlock()
	if got, want := s.DispatchedOffset(), s.MaxPhyOffset(); got != want {
		t.Fatalf("dispatched to %d after Dispatch, written to %d", got, want)
	}
	if n := s.MaxOffset("T", 0); n != 5 {
		t.Fatalf("queue max offset %d, want 5", n)
	}

	s.runMu.Lock()
	if _, err := s.PutMessage(ctx, newMsg("T", 0, "m", nil)); err != nil {
		t.Fatal(err)
	}
	s.Dispatch() // must not wait for runMu
	s.runMu.Unlock()
	waitDispatched(t, s)

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.Dispatch()
}
