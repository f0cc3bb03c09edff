package store

import (
	"context"
	"fmt"
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
