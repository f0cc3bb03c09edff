package queuelock

import (
	"reflect"
	"testing"
	"time"
)

func TestTableLockRenewExpire(t *testing.T) {
	now := time.Unix(1000, 0)
	tb := New(60*time.Second, func() time.Time { return now })
	q0, q1 := Queue{"t", 0}, Queue{"t", 1}

	steps := []struct {
		name    string
		client  string
		advance time.Duration
		want    []Queue
	}{
		{"a takes both", "a", 0, []Queue{q0, q1}},
		{"b gets nothing while a holds", "b", 10 * time.Second, nil},
		{"a renews", "a", 50 * time.Second, []Queue{q0, q1}},
		{"b still blocked 59s after renewal", "b", 59 * time.Second, nil},
		{"b takes over after expiry", "b", 2 * time.Second, []Queue{q0, q1}},
		{"a lost them", "a", 0, nil},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		if got := tb.TryLock("g", s.client, []Queue{q0, q1}); !reflect.DeepEqual(got, s.want) {
			t.Fatalf("%s: got %v want %v", s.name, got, s.want)
		}
	}
	if h := tb.Holder("g", q0); h != "b" {
		t.Fatalf("holder %q", h)
	}
	tb.Unlock("g", "a", []Queue{q0}) // not a's: ignored
	if h := tb.Holder("g", q0); h != "b" {
		t.Fatalf("holder after foreign unlock %q", h)
	}
	tb.Unlock("g", "b", []Queue{q0})
	if got := tb.TryLock("g", "a", []Queue{q0}); len(got) != 1 {
		t.Fatalf("a after unlock: %v", got)
	}
	if got := tb.TryLock("g", "c", []Queue{q1}); len(got) != 0 { // b holds q1 until it unlocks or its lock expires
		t.Fatalf("c took a queue b holds: %v", got)
	}
	if got := tb.TryLock("other", "b", []Queue{q0}); len(got) != 1 {
		t.Fatal("groups must be independent")
	}
}
