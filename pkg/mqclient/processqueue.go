package mqclient

import (
	"context"
	"sync"
	"time"
)

// processQueue is the client side of one assigned queue: the messages
// pulled and not yet finished, the offset that is safe to commit, and for
// ordered consumers the per-key lines and the broker lock.
type processQueue struct {
	q   Queue
	sub *subscription

	mu        sync.Mutex
	pending   map[int64]*MessageExt // pulled, not finished
	bytes     int
	base      int64 // commit offset when nothing is pending
	nextPull  int64
	lastSaved int64
	// lastSavedAt is when lastSaved was written (recommitAfter).
	lastSavedAt time.Time
	// rewound is set when a PULL_OFFSET_MOVED answer moves the position
	// back, until that position was committed (commitLocked writes it
	// without the forward-only guard).
	rewound   bool
	brokerID  int64                  // suggested broker for the next pull
	keys      map[string][]lineEntry // ordered: per-key messages not yet started
	busy      map[string]bool        // ordered: keys with a running task
	locked    bool
	lockUntil time.Time
	// gen counts the times the queue's lock was regained after it had
	// been lost (ordered consumers): pulls, lines and handler tasks of
	// an older generation are stale and are discarded, not delivered.
	gen uint64
	// resyncing is set from a regained lock until the queue was reset to
	// the committed offset (resync): nothing is pulled, handled or
	// committed meanwhile.
	resyncing bool

	// commitMu serialises the queue's offset writes (commit loop, drop,
	// Shutdown), so an older offset computed earlier can never be written
	// after a newer one; released (under commitMu) ends them once the
	// final commit before the unlock was made, so a late write from this
	// member cannot move the offset of the queue's next owner back.
	commitMu sync.Mutex
	released bool

	tasks    sync.WaitGroup // handler tasks from dispatch to outcome
	dropped  chan struct{}
	dropOnce sync.Once
	space    chan struct{} // signalled when messages finish (flow control)
}

// lineEntry is a message waiting in its key's line, with the subscription
// whose handler takes it (resolved at dispatch, outside pq.mu, because
// looking it up takes pc.mu, which is ordered before pq.mu).
type lineEntry struct {
	m   *MessageExt
	sub *subscription
}

func newProcessQueue(q Queue, sub *subscription) *processQueue {
	return &processQueue{q: q, sub: sub, pending: map[int64]*MessageExt{}, keys: map[string][]lineEntry{},
		busy: map[string]bool{}, dropped: make(chan struct{}), space: make(chan struct{}, 1), lastSaved: -1}
}

func (pq *processQueue) init(off int64) {
	pq.mu.Lock()
	pq.base, pq.nextPull = off, off
	pq.mu.Unlock()
}

func (pq *processQueue) drop() {
	pq.mu.Lock()
	pq.dropOnce.Do(func() { close(pq.dropped) })
	pq.mu.Unlock()
}

func (pq *processQueue) isDropped() bool {
	select {
	case <-pq.dropped:
		return true
	default:
		return false
	}
}

// waitIdle waits until no handler task of the queue is outstanding.
func (pq *processQueue) waitIdle(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { pq.tasks.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// commitOffset returns the offset up to which every message is finished,
// whether it differs from the last one saved, and whether the broker moved
// the queue's position back (PULL_OFFSET_MOVED) since the last commit.
func (pq *processQueue) commitOffset() (int64, bool, bool) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	off := pq.base
	for o := range pq.pending {
		if o < off {
			off = o
		}
	}
	// An unchanged offset is written again now and then, as RocketMQ's
	// clients rewrite every offset each persist interval: a broker that
	// was killed before persisting its offset table has an older one, and
	// a queue receiving nothing new would otherwise never be corrected.
	return off, off != pq.lastSaved || time.Since(pq.lastSavedAt) >= recommitAfter, pq.rewound
}

// recommitAfter is how often an unchanged offset is written again.
const recommitAfter = 20 * time.Second

// movedLocked takes the position a PULL_OFFSET_MOVED answer gives; a move
// back is committed as it is (rewound). Called with pq.mu held.
func (pq *processQueue) movedLocked(next int64) {
	if next < pq.base {
		pq.rewound = true
	}
	pq.base = next
}

// committed records a successful write of off; rewound is what
// commitOffset reported for it (a later move back sets it again).
func (pq *processQueue) committed(off int64, rewound bool) {
	pq.mu.Lock()
	pq.lastSaved, pq.lastSavedAt = off, time.Now()
	if rewound {
		pq.rewound = false
	}
	pq.mu.Unlock()
}

// full reports whether flow control should pause pulling.
func (pq *processQueue) full(maxCount, maxBytes int) bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return len(pq.pending) >= maxCount || pq.bytes >= maxBytes
}

// lockLease is how long a granted lock is taken as held without renewal:
// a lock not renewed for 30 s may have expired on the broker (60 s), so
// the queue stops starting handlers well before another consumer can get
// it.
const lockLease = 30 * time.Second

func (pq *processQueue) setLocked(ok bool) {
	pq.mu.Lock()
	pq.locked = ok
	if ok {
		pq.lockUntil = time.Now().Add(lockLease)
	}
	pq.mu.Unlock()
}

// relock records a lock the broker granted again. If the queue's lock had
// been lost (refused, its connection closed) or had lapsed (not renewed
// within lockLease) since it was last held, another member may have owned
// the queue meanwhile, consumed past this member's in-memory position and
// committed: everything pulled is stale. The queue then starts a new
// generation: the messages waiting in its key lines are discarded and it
// stays resyncing (nothing pulled, started or committed) until resume
// resets it to the committed offset. regained reports that, with the new
// generation.
func (pq *processQueue) relock() (gen uint64, regained bool) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	now := time.Now()
	regained = !pq.locked || !now.Before(pq.lockUntil)
	pq.locked, pq.lockUntil = true, now.Add(lockLease)
	if regained {
		pq.gen++
		pq.resyncing = true
		for k, line := range pq.keys {
			for _, e := range line {
				pq.forget(e.m)
			}
			delete(pq.keys, k)
		}
	}
	return pq.gen, regained
}

// forget removes m from pending; pq.mu is held.
func (pq *processQueue) forget(m *MessageExt) {
	if _, ok := pq.pending[m.QueueOffset]; ok {
		delete(pq.pending, m.QueueOffset)
		pq.bytes -= len(m.Body)
	}
}

// resume ends the resync of generation gen (relock): the handlers of the
// older generations have returned, so nothing in memory is still needed;
// pulling restarts at off, the offset committed on the broker, as it
// would for a new owner. It reports false if gen is no longer current
// (the lock was lost and regained again: that resync takes over).
func (pq *processQueue) resume(gen uint64, off int64) bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if pq.gen != gen || !pq.resyncing {
		return false
	}
	pq.pending, pq.bytes = map[int64]*MessageExt{}, 0
	pq.keys, pq.busy = map[string][]lineEntry{}, map[string]bool{}
	pq.base, pq.nextPull = off, off
	pq.lastSaved, pq.lastSavedAt = off, time.Now()
	pq.resyncing = false
	return true
}

// lockValid reports whether the broker lock is held and fresh (lockLease)
// and the queue is not resyncing.
func (pq *processQueue) lockValid() bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.lockValidLocked()
}

func (pq *processQueue) lockValidLocked() bool {
	return pq.locked && time.Now().Before(pq.lockUntil) && !pq.resyncing
}

// runnable reports whether a handler task of generation gen may start a
// message: the lock is valid and gen is current.
func (pq *processQueue) runnable(gen uint64) bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.gen == gen && pq.lockValidLocked()
}

// stale reports whether generation gen was superseded by a regained lock.
func (pq *processQueue) stale(gen uint64) bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.gen != gen
}

// finish removes handled messages.
func (pq *processQueue) finish(msgs ...*MessageExt) {
	pq.mu.Lock()
	for _, m := range msgs {
		pq.forget(m)
	}
	pq.mu.Unlock()
	select {
	case pq.space <- struct{}{}:
	default:
	}
}

// sleep waits d unless the queue is dropped first.
func (pq *processQueue) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-pq.dropped:
		return false
	}
}
