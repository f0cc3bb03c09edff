package controller

import (
	"slices"
	"sync"
	"time"
)

// liveKey names one broker of one group.
type liveKey struct {
	name string
	id   int64
}

// liveInfo is what a broker's last BROKER_HEARTBEAT said; it ranks the
// candidates of an election.
type liveInfo struct {
	Addr          string
	Last          time.Time
	Timeout       time.Duration // the heartbeat's own timeout; 0 = the controller's
	Epoch         int32
	MaxOffset     int64
	ConfirmOffset int64
	Priority      int32 // electionPriority: lower wins
}

// liveTable is broker liveness as this node saw it. It is not replicated:
// brokers send heartbeats to every controller node, so a new leader
// already knows who is alive. A broker the node has not heard from since
// it became leader counts as heard at that moment (grace: a fresh leader
// never declares every broker dead at once).
type liveTable struct {
	mu       sync.Mutex
	m        map[liveKey]liveInfo
	since    time.Time
	lastScan time.Time
	timeout  time.Duration
	now      func() time.Time
}

func newLiveTable(timeout time.Duration, now func() time.Time) *liveTable {
	return &liveTable{m: map[liveKey]liveInfo{}, timeout: timeout, now: now, since: now()}
}

// heard records a heartbeat.
func (t *liveTable) heard(name string, id int64, info liveInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	info.Last = t.now()
	t.m[liveKey{name, id}] = info
}

// touch records that a broker spoke (a register) without heartbeat data.
func (t *liveTable) touch(name string, id int64, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := liveKey{name, id}
	info := t.m[k]
	info.Addr, info.Last = addr, t.now()
	t.m[k] = info
}

// restartGrace starts the grace period (on becoming leader).
func (t *liveTable) restartGrace() {
	t.mu.Lock()
	t.since = t.now()
	t.mu.Unlock()
}

// scanned records a tick of the scan loop, due every interval, and
// reports whether it came late by more than half the heartbeat timeout:
// the node itself was stalled (the machine, the process), so heartbeats
// sent meanwhile may still wait unread in its sockets, and a broker's
// silence says nothing. It then restarts the grace period, as a new
// leader does, so that no broker is found dead on the stall's account.
func (t *liveTable) scanned(interval time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	prev := t.lastScan
	t.lastScan = now
	if prev.IsZero() || now.Sub(prev) <= interval+t.timeout/2 {
		return false
	}
	t.since = now
	return true
}

// alive reports whether the broker was heard within its timeout.
func (t *liveTable) alive(name string, id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	info, ok := t.m[liveKey{name, id}]
	last, timeout := t.since, t.timeout
	if ok {
		if info.Last.After(last) {
			last = info.Last
		}
		if info.Timeout > 0 {
			timeout = info.Timeout
		}
	}
	return t.now().Sub(last) < timeout
}

// info returns the broker's last heartbeat data.
func (t *liveTable) info(name string, id int64) liveInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[liveKey{name, id}]
}

// elect chooses a group's new master, or NoBrokerID. Candidates are the
// alive members of the SyncStateSet; only if none is alive and unclean is
// set, every alive replica. The old master wins while it is a candidate
// (unless another broker is preferred); a preferred broker (designated by
// an operator) wins only if it is a candidate, else nobody does; otherwise
// the best heartbeat wins: highest epoch, then highest max offset, then
// lowest election priority, then lowest id.
func elect(g *Group, alive func(int64) bool, info func(int64) liveInfo, prefer int64, unclean bool) int64 {
	if m := pick(g, g.SyncStateSet, alive, info, prefer); m != noBroker {
		return m
	}
	if unclean {
		return pick(g, g.ids(), alive, info, prefer)
	}
	return noBroker
}

const noBroker = int64(-1) // protocol.NoBrokerID, short for the rules

func pick(g *Group, ids []int64, alive func(int64) bool, info func(int64) liveInfo, prefer int64) int64 {
	var cands []int64
	for _, id := range ids {
		if _, ok := g.Replicas[id]; ok && alive(id) {
			cands = append(cands, id)
		}
	}
	if len(cands) == 0 {
		return noBroker
	}
	if g.HasMaster() && slices.Contains(cands, g.MasterID) && (prefer == noBroker || prefer == g.MasterID) {
		return g.MasterID
	}
	if prefer != noBroker {
		if slices.Contains(cands, prefer) {
			return prefer
		}
		return noBroker
	}
	slices.SortFunc(cands, func(a, b int64) int {
		ia, ib := info(a), info(b)
		switch {
		case ia.Epoch != ib.Epoch:
			return cmpDesc(int64(ia.Epoch), int64(ib.Epoch))
		case ia.MaxOffset != ib.MaxOffset:
			return cmpDesc(ia.MaxOffset, ib.MaxOffset)
		case ia.Priority != ib.Priority:
			return int(ia.Priority) - int(ib.Priority)
		}
		return cmpDesc(b, a)
	})
	return cands[0]
}

func cmpDesc(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}
