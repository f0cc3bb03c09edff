package mqclient

import (
	"fmt"
	"testing"
)

func queues(n int, brokers ...string) []Queue {
	var qs []Queue
	for _, b := range brokers {
		for i := 0; i < n; i++ {
			qs = append(qs, Queue{Topic: "t", BrokerName: b, QueueID: int32(i)})
		}
	}
	return qs
}

func ids(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("c%d", i))
	}
	return out
}

func qids(qs []Queue) []int32 {
	var out []int32
	for _, q := range qs {
		out = append(out, q.QueueID)
	}
	return out
}

func TestAllocateAveragelyMatchesRocketMQ(t *testing.T) {
	// Expected splits computed with Java's AllocateMessageQueueAveragely.
	cases := []struct {
		queues, members int
		want            [][]int32
	}{
		{8, 3, [][]int32{{0, 1, 2}, {3, 4, 5}, {6, 7}}},
		{4, 4, [][]int32{{0}, {1}, {2}, {3}}},
		{2, 3, [][]int32{{0}, {1}, nil}},
		{7, 2, [][]int32{{0, 1, 2, 3}, {4, 5, 6}}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dq-%dc", c.queues, c.members), func(t *testing.T) {
			for i, id := range ids(c.members) {
				got := qids(AllocateAveragely().Allocate(queues(c.queues, "b"), ids(c.members), id))
				if fmt.Sprint(got) != fmt.Sprint(c.want[i]) {
					t.Errorf("member %d: got %v, want %v", i, got, c.want[i])
				}
			}
		})
	}
}

func TestAllocateByCircle(t *testing.T) {
	got := qids(AllocateByCircle().Allocate(queues(8, "b"), ids(3), "c1"))
	if fmt.Sprint(got) != "[1 4 7]" {
		t.Fatalf("got %v", got)
	}
}

// TestAllocateStrategiesPartition checks that every strategy gives every
// queue to exactly one member and nothing to a non-member.
func TestAllocateStrategiesPartition(t *testing.T) {
	strategies := []AllocateStrategy{AllocateAveragely(), AllocateByCircle(), AllocateConsistentHash(0),
		AllocateByMachineRoom("room1", "room2")}
	all := queues(6, "room1@a", "room2@b")
	for _, s := range strategies {
		for _, n := range []int{1, 2, 5, 13} {
			owner := map[Queue]string{}
			for _, id := range ids(n) {
				for _, q := range s.Allocate(all, ids(n), id) {
					if prev, ok := owner[q]; ok {
						t.Errorf("%s/%d: %v owned by %s and %s", s.Name(), n, q, prev, id)
					}
					owner[q] = id
				}
			}
			if len(owner) != len(all) {
				t.Errorf("%s/%d: %d of %d queues assigned", s.Name(), n, len(owner), len(all))
			}
			if got := s.Allocate(all, ids(n), "stranger"); len(got) != 0 {
				t.Errorf("%s: a non-member got %v", s.Name(), got)
			}
		}
	}
}

func TestAllocateByMachineRoomFilters(t *testing.T) {
	got := AllocateByMachineRoom("room1").Allocate(queues(2, "room1@a", "room2@b"), ids(1), "c0")
	for _, q := range got {
		if q.BrokerName != "room1@a" {
			t.Errorf("queue of another room: %v", q)
		}
	}
	if len(got) != 2 {
		t.Fatalf("got %v", got)
	}
}

func TestAllocateConsistentHashStable(t *testing.T) {
	all := queues(16, "a", "b")
	s := AllocateConsistentHash(10)
	before := map[Queue]string{}
	for _, id := range ids(4) {
		for _, q := range s.Allocate(all, ids(4), id) {
			before[q] = id
		}
	}
	moved := 0
	for _, id := range ids(5) {
		for _, q := range s.Allocate(all, ids(5), id) {
			if before[q] != id {
				moved++
			}
		}
	}
	if moved > len(all)/2 {
		t.Errorf("a joining member moved %d of %d queues", moved, len(all))
	}
}
