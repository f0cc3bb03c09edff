package fault

import (
	"errors"
	"testing"
	"time"
)

func TestFireCountsAndReset(t *testing.T) {
	exits := 0
	s := New(map[string]Spec{DeliverTwice: {Enabled: true}, "bogus": {Enabled: true}}, func(code int) {
		if code != ExitCode {
			t.Fatalf("code %d", code)
		}
		exits++
	}, nil)
	for range 3 {
		if ok, _ := s.Fire(DeliverTwice); !ok {
			t.Fatal("count 0 must fire every time")
		}
	}
	if err := s.Arm(CrashAfterCommit, Spec{Enabled: true, Count: 2}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.Crash(CrashAfterCommit)
	}
	if exits != 2 {
		t.Fatalf("crashed %d times, want 2", exits)
	}
	if err := s.Arm(SlowLocalTx, Spec{Enabled: true, Delay: time.Second}); err != nil {
		t.Fatal(err)
	}
	if ok, d := s.Fire(SlowLocalTx); !ok || d != time.Second {
		t.Fatalf("slow = %v %v", ok, d)
	}
	if err := s.Arm("nope", Spec{Enabled: true}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown: %v", err)
	}
	s.Reset()
	for _, st := range s.List() {
		if st.Enabled {
			t.Fatalf("%s on after Reset", st.Name)
		}
	}
	var nilSet *Set
	if ok, _ := nilSet.Fire(DeliverTwice); ok {
		t.Fatal("nil set fired")
	}
}
