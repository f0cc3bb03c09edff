package longpoll

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func resumeChan() (func(bool), chan bool) {
	ch := make(chan bool, 1)
	return func(timedOut bool) { ch <- timedOut }, ch
}

func wait(t *testing.T, ch chan bool) bool {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("request was not resumed")
		return false
	}
}

func TestServiceNotifyWakesMatchingRequest(t *testing.T) {
	var max atomic.Int64
	s := New(func(string, int32) int64 { return max.Load() }, time.Hour)
	defer s.Close()

	resA, chA := resumeChan()
	resB, chB := resumeChan()
	s.Hold(&Request{Topic: "t", QueueID: 0, Offset: 0, Deadline: time.Now().Add(time.Hour), Resume: resA,
		Match: func(code int64, _ []byte) bool { return code == 42 }})
	s.Hold(&Request{Topic: "t", QueueID: 1, Offset: 0, Deadline: time.Now().Add(time.Hour), Resume: resB})
	if s.Held() != 2 {
		t.Fatalf("held = %d", s.Held())
	}
	s.Notify("t", 0, 1, 7, nil) // tag does not match: A stays
	select {
	case <-chA:
		t.Fatal("woken by a non-matching message")
	default:
	}
	s.Notify("t", 0, 2, 42, nil)
	if timedOut := wait(t, chA); timedOut {
		t.Fatal("A reported a timeout")
	}
	s.Notify("t", 1, 1, 0, nil)
	if wait(t, chB) {
		t.Fatal("B reported a timeout")
	}
	if s.Held() != 0 {
		t.Fatalf("held = %d", s.Held())
	}
}

func TestServiceDeadline(t *testing.T) {
	s := New(nil, time.Hour)
	defer s.Close()
	res, ch := resumeChan()
	s.Hold(&Request{Topic: "t", Deadline: time.Now().Add(20 * time.Millisecond), Resume: res})
	if !wait(t, ch) {
		t.Fatal("want timedOut at the deadline")
	}
}

func TestServiceHoldAfterArrivalResumesAtOnce(t *testing.T) {
	s := New(func(string, int32) int64 { return 5 }, time.Hour)
	defer s.Close()
	res, ch := resumeChan()
	s.Hold(&Request{Topic: "t", Offset: 4, Deadline: time.Now().Add(time.Hour), Resume: res})
	if wait(t, ch) {
		t.Fatal("want a wake, not a timeout")
	}
}

func TestServiceRecheck(t *testing.T) {
	var max atomic.Int64
	s := New(func(string, int32) int64 { return max.Load() }, 10*time.Millisecond)
	defer s.Close()
	res, ch := resumeChan()
	s.Hold(&Request{Topic: "t", Offset: 0, Deadline: time.Now().Add(time.Hour), Resume: res})
	max.Store(1) // no Notify: the periodic re-check must find it
	if wait(t, ch) {
		t.Fatal("want a wake")
	}
}

func TestServiceCloseResumesAll(t *testing.T) {
	s := New(nil, time.Hour)
	res, ch := resumeChan()
	s.Hold(&Request{Topic: "t", Deadline: time.Now().Add(time.Hour), Resume: res})
	s.Close()
	if !wait(t, ch) {
		t.Fatal("want timedOut on close")
	}
	res2, ch2 := resumeChan()
	s.Hold(&Request{Topic: "t", Deadline: time.Now().Add(time.Hour), Resume: res2})
	if !wait(t, ch2) {
		t.Fatal("hold after close must resume at once")
	}
}

func TestServiceLimits(t *testing.T) {
	tests := []struct {
		name    string
		limits  Limits
		owners  []any // owner of each request, in order
		refused []error
	}{
		{"total", Limits{Max: 2}, []any{"a", "b", "c"}, []error{nil, nil, ErrFullTotal}},
		{"per owner", Limits{Max: 10, MaxPerOwner: 1}, []any{"a", "a", "b"}, []error{nil, ErrFullOwner, nil}},
		{"no owner skips per-owner", Limits{MaxPerOwner: 1}, []any{nil, nil}, []error{nil, nil}},
		{"unbounded", Limits{}, []any{"a", "a", "a"}, []error{nil, nil, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(func(string, int32) int64 { return 0 }, time.Hour)
			defer s.Close()
			s.SetLimits(tt.limits)
			var wantTotal, wantOwner int64
			for i, o := range tt.owners {
				err := s.Hold(&Request{Topic: "t", Deadline: time.Now().Add(time.Hour), Owner: o, Resume: func(bool) {}})
				if err != tt.refused[i] {
					t.Fatalf("hold %d: err = %v, want %v", i, err, tt.refused[i])
				}
				switch tt.refused[i] {
				case ErrFullTotal:
					wantTotal++
				case ErrFullOwner:
					wantOwner++
				}
			}
			if gotT, gotO := s.Refused(); gotT != wantTotal || gotO != wantOwner {
				t.Fatalf("refused = %d, %d; want %d, %d", gotT, gotO, wantTotal, wantOwner)
			}
		})
	}
}

func TestServiceLimitFreedOnResume(t *testing.T) {
	var max atomic.Int64
	s := New(func(string, int32) int64 { return max.Load() }, time.Hour)
	defer s.Close()
	s.SetLimits(Limits{Max: 5, MaxPerOwner: 1})
	res, ch := resumeChan()
	if err := s.Hold(&Request{Topic: "t", Deadline: time.Now().Add(time.Hour), Owner: "c", Resume: res}); err != nil {
		t.Fatal(err)
	}
	if err := s.Hold(&Request{Topic: "t", Deadline: time.Now().Add(time.Hour), Owner: "c", Resume: func(bool) {}}); !errors.Is(err, ErrFull) {
		t.Fatalf("second hold: err = %v, want ErrFull", err)
	}
	max.Store(1)
	s.Notify("t", 0, 1, 0, nil)
	wait(t, ch)
	res2, ch2 := resumeChan()
	if err := s.Hold(&Request{Topic: "t", Offset: 1, Deadline: time.Now().Add(time.Hour), Owner: "c", Resume: res2}); err != nil {
		t.Fatalf("hold after resume: %v", err)
	}
	s.Close()
	if !wait(t, ch2) {
		t.Fatal("close should resume as timed out")
	}
}

// TestServiceNotifyDoesNotAllocate: Notify runs for every dispatched
// message, so looking up a queue nobody (or a non-matching pull) waits on
// must not allocate.
func TestServiceNotifyDoesNotAllocate(t *testing.T) {
	s := New(func(string, int32) int64 { return 0 }, time.Hour)
	defer s.Close()
	res, _ := resumeChan()
	s.Hold(&Request{Topic: "t", QueueID: 1, Offset: 0, Deadline: time.Now().Add(time.Hour), Resume: res,
		Match: func(int64, []byte) bool { return false }})
	allocs := testing.AllocsPerRun(100, func() {
		s.Notify("t", 0, 5, 0, nil) // no waiter on queue 0
		s.Notify("t", 1, 5, 0, nil) // a waiter that does not match
	})
	if allocs != 0 {
		t.Errorf("Notify allocated %.1f times per call pair", allocs)
	}
	if s.Held() != 1 {
		t.Errorf("held = %d, want 1", s.Held())
	}
}
