package store

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestTruncate cuts a store back across a segment end and checks the
// commit log, the consume queues, the queue offset counters, a put after
// it and a reopen (the checkpoint must not point past the new end).
func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep int // messages kept of 300 (about 4 segments of 64 KiB)
	}{{"middle of a later segment", 170}, {"inside the first segment", 3}, {"nothing", 0}, {"everything", 300}} {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig(t)
			s := openStore(t, c)
			var ends []int64
			for i := range 300 {
				r := put(t, s, newMsg("T", int32(i%2), fmt.Sprintf("%0900d", i), nil))
				ends = append(ends, r.CommitLogOffset+int64(r.WroteBytes))
			}
			end := int64(0)
			if tc.keep > 0 {
				end = ends[tc.keep-1]
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.WaitDispatched(ctx, s.MaxPhyOffset()); err != nil {
				t.Fatal(err)
			}
			if err := s.Truncate(end); err != nil {
				t.Fatal(err)
			}
			check := func(s *Store, extra int) {
				t.Helper()
				if got := s.MaxPhyOffset(); extra == 0 && got != end {
					t.Fatalf("max offset %d, want %d", got, end)
				}
				for q := int32(0); q < 2; q++ {
					want := int64((tc.keep + 1 - int(q)) / 2)
					if extra > 0 && q == 0 {
						want++
					}
					if got := s.MaxOffset("T", q); got != want {
						t.Fatalf("queue %d max %d, want %d", q, got, want)
					}
				}
			}
			check(s, 0)
			r := put(t, s, newMsg("T", 0, "after", nil))
			if r.QueueOffset != int64((tc.keep+1)/2) || r.CommitLogOffset < end {
				t.Fatalf("put after truncation: queue offset %d commit log offset %d (end %d)", r.QueueOffset, r.CommitLogOffset, end)
			}
			if err := s.WaitDispatched(ctx, s.MaxPhyOffset()); err != nil {
				t.Fatal(err)
			}
			got := s.GetMessage("T", 0, r.QueueOffset, 1, 1<<20, nil)
			if len(got.Records) != 1 || got.Records[0].CommitLogOffset != r.CommitLogOffset {
				t.Fatalf("read after truncation: %v %+v", got.Status, got.Records)
			}
			check(s, 1)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2 := openStore(t, c)
			check(s2, 1)
		})
	}
}

// TestTakeWritesAboveDispatchLimit: a replica holding records past its
// dispatch limit (the old master's confirm offset) and a torn record at
// its end is promoted. TakeWrites keeps the whole records above the limit
// (undispatched), drops only the torn one, and sets the queue offset
// counters past them, so the new master's first put takes the queue
// offset after the last replicated record and, once the limit lifts,
// every record is in the consume queue at its own offset.
func TestTakeWritesAboveDispatchLimit(t *testing.T) {
	master := openStore(t, testConfig(t))
	var ends []int64
	for i := range 10 {
		r := put(t, master, newMsg("T", 0, fmt.Sprintf("m%d", i), nil))
		ends = append(ends, r.CommitLogOffset+int64(r.WroteBytes))
	}
	replica := openStore(t, testConfig(t))
	replica.SetReadOnly(true)
	var limit atomic.Int64
	limit.Store(ends[3]) // m0..m3 confirmed
	replica.SetDispatchLimit(limit.Load)
	data, err := master.ReadCommitLog(0, int(master.MaxPhyOffset()))
	if err != nil {
		t.Fatal(err)
	}
	torn := ends[9] - 10 // m9 arrives torn
	if err := replica.AppendRaw(0, data[:torn]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := replica.WaitDispatched(ctx, ends[3]); err != nil {
		t.Fatal(err)
	}
	if got := replica.MaxOffset("T", 0); got != 4 {
		t.Fatalf("consume queue max %d under the limit, want 4", got)
	}
	end, err := replica.TakeWrites()
	if err != nil {
		t.Fatal(err)
	}
	if end != ends[8] {
		t.Fatalf("TakeWrites end %d, want %d (the whole records m0..m8; only the torn m9 dropped)", end, ends[8])
	}
	if got := replica.DispatchedOffset(); got > ends[3] {
		t.Fatalf("dispatched to %d past the limit %d", got, ends[3])
	}
	r := put(t, replica, newMsg("T", 0, "new", nil))
	if r.QueueOffset != 9 || r.CommitLogOffset != end {
		t.Fatalf("first put as master: queue offset %d at %d, want 9 at %d", r.QueueOffset, r.CommitLogOffset, end)
	}
	limit.Store(math.MaxInt64)
	replica.WakeDispatcher()
	if err := replica.WaitDispatched(ctx, replica.MaxPhyOffset()); err != nil {
		t.Fatal(err)
	}
	bodies := queueBodies(t, replica, "T", 0)
	want := []string{"0:m0", "1:m1", "2:m2", "3:m3", "4:m4", "5:m5", "6:m6", "7:m7", "8:m8", "9:new"}
	if !slices.Equal(bodies, want) {
		t.Fatalf("consume queue after the limit lifted: %v, want %v", bodies, want)
	}
}
