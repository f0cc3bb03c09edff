package store

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestRecoveryHonoursDispatchLimit: a store reopened with a dispatch limit
// (WithDispatchLimit; a broker starting in controller mode) does not make
// the records above it visible during recovery, after a clean close or a
// crash; a put before they are dispatched takes the queue offset after
// theirs, and lifting the limit dispatches them in order. Before, recovery
// re-dispatched every record before the broker could set the limit, so a
// returning old master exposed its unconfirmed tail until it truncated it.
func TestRecoveryHonoursDispatchLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crash bool
	}{{"clean close", false}, {"crash", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig(t)
			s, err := Open(c, nil)
			if err != nil {
				t.Fatal(err)
			}
			var limit atomic.Int64
			limit.Store(math.MaxInt64)
			s.SetDispatchLimit(limit.Load)
			var ends []int64
			for i := range 5 {
				if i == 3 {
					waitDispatched(t, s)
					limit.Store(ends[2]) // m3 and m4 are never confirmed
				}
				r := put(t, s, newMsg("T", 0, fmt.Sprintf("m%d", i), nil))
				ends = append(ends, r.CommitLogOffset+int64(r.WroteBytes))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.crash {
				if err := os.WriteFile(c.abortPath(), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}

			var limit2 atomic.Int64
			limit2.Store(ends[2])
			s = openStoreWith(t, c, WithDispatchLimit(limit2.Load))
			if got := s.MaxOffset("T", 0); got != 3 {
				t.Fatalf("after reopening, the consume queue holds %d units, want 3 (m3, m4 are above the limit)", got)
			}
			if got := s.DispatchedOffset(); got > ends[2] {
				t.Fatalf("dispatched to %d, past the limit %d", got, ends[2])
			}
			r := put(t, s, newMsg("T", 0, "new", nil))
			if r.QueueOffset != 5 {
				t.Fatalf("first put after reopening: queue offset %d, want 5 (after the held m3, m4)", r.QueueOffset)
			}
			limit2.Store(math.MaxInt64)
			s.WakeDispatcher()
			waitDispatched(t, s)
			if got, want := queueBodies(t, s, "T", 0), []string{"0:m0", "1:m1", "2:m2", "3:m3", "4:m4", "5:new"}; !slices.Equal(got, want) {
				t.Fatalf("consume queue after the limit lifted: %v, want %v", got, want)
			}
		})
	}
}

func openStoreWith(t testing.TB, c Config, opts ...Option) *Store {
	t.Helper()
	s, err := Open(c, nil, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// queueBodies returns "queueOffset:body" of every message of a queue.
func queueBodies(t testing.TB, s *Store, topic string, qid int32) []string {
	t.Helper()
	got := s.GetMessage(topic, qid, 0, 64, 1<<20, nil)
	var out []string
	pos := 0
	for _, rec := range got.Records {
		b := got.Data[pos : pos+int(rec.Size)]
		pos += int(rec.Size)
		v, err := protocol.ViewRecord(b, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d:%s", v.QueueOffset, b[v.BodyOffset:v.BodyOffset+v.BodyLength]))
	}
	return out
}
