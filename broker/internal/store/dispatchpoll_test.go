package store

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDispatchPolling checks that every append reaches the dispatch
// listener without an explicit wake-up (WaitDispatched would give one),
// whether the dispatcher was idle (woken by the append) or polling
// (appends skip the wake-up), and that it leaves polling once the appends
// stop, so that the next lone append wakes it again.
func TestDispatchPolling(t *testing.T) {
	s := openStore(t, testConfig(t))
	var mu sync.Mutex
	var notified, want int
	reached := make(chan struct{}, 1)
	s.SetDispatchListener(func(string, int32, int64, int64, []byte) {
		mu.Lock()
		notified++
		if notified == want {
			reached <- struct{}{}
		}
		mu.Unlock()
	})
	waitNotified := func(t *testing.T, n int) {
		t.Helper()
		mu.Lock()
		want += n
		done := notified == want
		mu.Unlock()
		if done {
			return
		}
		select {
		case <-reached:
		case <-time.After(10 * time.Second):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("listener notified %d times, want %d", notified, want)
		}
	}
	// waitIdle waits for the dispatcher to have finished its pass (the
	// listener runs before it publishes DispatchedOffset) and left polling.
	waitIdle := func(t *testing.T) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); s.dpolling.Load() || s.DispatchedOffset() != s.MaxPhyOffset(); {
			if time.Now().After(deadline) {
				t.Fatalf("dispatcher polling %v, dispatched to %d, log ends at %d",
					s.dpolling.Load(), s.DispatchedOffset(), s.MaxPhyOffset())
			}
			time.Sleep(time.Millisecond)
		}
	}
	for _, tc := range []struct {
		name             string
		writers, perEach int
		bursts           int
	}{
		{"one append", 1, 1, 1},
		{"a stream from 4 writers", 4, 500, 1},
		{"bursts", 2, 100, 5},
		{"one append after polling", 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range tc.bursts {
				var wg sync.WaitGroup
				var failed atomic.Bool
				for w := range tc.writers {
					wg.Go(func() {
						m := newMsg("poll", int32(w), "body", nil)
						for range tc.perEach {
							if _, err := s.PutMessage(t.Context(), m); err != nil {
								failed.Store(true)
								return
							}
						}
					})
				}
				wg.Wait()
				if failed.Load() {
					t.Fatal("PutMessage failed")
				}
				waitNotified(t, tc.writers*tc.perEach)
			}
			waitIdle(t)
		})
	}
}
