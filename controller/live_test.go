package controller

import (
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestElectPolicy(t *testing.T) {
	group := func(master int64, sss ...int64) *Group {
		g := &Group{BrokerName: "b", MasterID: master, MasterEpoch: 1, SyncStateSet: sss, Replicas: map[int64]*Replica{}}
		for id := int64(1); id <= 4; id++ {
			g.Replicas[id] = &Replica{Addr: addrOf(id)}
		}
		return g
	}
	aliveSet := func(ids ...int64) func(int64) bool {
		return func(id int64) bool {
			for _, a := range ids {
				if a == id {
					return true
				}
			}
			return false
		}
	}
	infos := map[int64]liveInfo{
		1: {Epoch: 1, MaxOffset: 500},
		2: {Epoch: 1, MaxOffset: 900},
		3: {Epoch: 1, MaxOffset: 900, Priority: -1},
		4: {Epoch: 2, MaxOffset: 10},
	}
	info := func(id int64) liveInfo { return infos[id] }
	none := protocol.NoBrokerID
	cases := []struct {
		name    string
		g       *Group
		alive   []int64
		prefer  int64
		unclean bool
		want    int64
	}{
		{"alive master stays", group(1, 1, 2), []int64{1, 2}, none, false, 1},
		{"dead master: best in-sync by offset", group(1, 1, 2, 4), []int64{2, 3}, none, false, 2},
		{"dead master: epoch beats offset", group(1, 1, 2, 4), []int64{2, 4}, none, false, 4},
		{"tie on offset: lower priority wins", group(1, 1, 2, 3), []int64{2, 3}, none, false, 3},
		{"no alive in-sync replica, unclean off", group(1, 1, 2), []int64{3, 4}, none, false, none},
		{"no alive in-sync replica, unclean on", group(1, 1, 2), []int64{3, 4}, none, true, 4},
		{"preferred in-sync replica", group(1, 1, 2, 3), []int64{1, 2, 3}, 3, false, 3},
		{"preferred replica not in sync", group(1, 1, 2), []int64{1, 2, 3}, 3, false, none},
		{"unregistered id in the set is ignored", group(1, 1, 7), []int64{7}, none, false, none},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := elect(tc.g, aliveSet(tc.alive...), info, tc.prefer, tc.unclean); got != tc.want {
				t.Fatalf("elect = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLiveTable(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	lt := newLiveTable(10*time.Second, clock)
	// grace: nothing heard yet, within the timeout of the start
	if !lt.alive("b", 1) {
		t.Fatal("unknown broker dead during the grace period")
	}
	now = now.Add(11 * time.Second)
	if lt.alive("b", 1) {
		t.Fatal("unknown broker alive after the grace period")
	}
	lt.heard("b", 1, liveInfo{Addr: "a", Timeout: 2 * time.Second, MaxOffset: 7})
	if !lt.alive("b", 1) || lt.info("b", 1).MaxOffset != 7 {
		t.Fatal("heard broker not alive")
	}
	now = now.Add(3 * time.Second) // the heartbeat's own timeout applies
	if lt.alive("b", 1) {
		t.Fatal("broker alive past its own heartbeat timeout")
	}
	lt.restartGrace() // a new leader gives everyone a fresh timeout
	if !lt.alive("b", 1) {
		t.Fatal("broker dead right after a leadership change")
	}
}

// TestLiveTableScanStall: a scan tick that comes late by more than half
// the heartbeat timeout (the controller itself was stalled, and the
// heartbeats sent meanwhile are not read yet) restarts the grace period;
// ticks on time change nothing.
func TestLiveTableScanStall(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	lt := newLiveTable(2*time.Second, clock)
	const interval = 50 * time.Millisecond
	if lt.scanned(interval) {
		t.Fatal("first tick counted as a stall")
	}
	lt.heard("b", 1, liveInfo{Addr: "a"})
	for i, tc := range []struct {
		after   time.Duration
		stalled bool
		alive   bool
	}{
		{interval, false, true},
		{time.Second, false, true},            // late, by less than timeout/2
		{1150 * time.Millisecond, true, true}, // 2.2 s after the heartbeat: alive by the grace
		{interval, false, true},
	} {
		now = now.Add(tc.after)
		if got := lt.scanned(interval); got != tc.stalled {
			t.Fatalf("tick %d (+%v): stalled %v, want %v", i, tc.after, got, tc.stalled)
		}
		if got := lt.alive("b", 1); got != tc.alive {
			t.Fatalf("tick %d (+%v): alive %v, want %v", i, tc.after, got, tc.alive)
		}
	}
	// ticks on time: the grace runs out, the silent broker is dead
	for range 40 {
		now = now.Add(interval)
		if lt.scanned(interval) {
			t.Fatal("a tick on time counted as a stall")
		}
	}
	if lt.alive("b", 1) {
		t.Fatal("broker alive 2 s after the grace began, without a heartbeat")
	}
}
