// Package pidstate keeps the broker's idempotent-producer state (Tide's
// take on Kafka's ProducerStateManager): per producer id its epoch, and per
// (producer id, topic, queue) the last few stored runs of sequences with
// the queue offsets and commit log offsets they got. The send path asks
// Check before appending a stamped message and calls Record after; a
// follower (Follower) applies every stamped record of the commit log, so
// the state survives restarts (snapshot + scan from the snapshot's offset)
// and is already there on a slave that is promoted.
package pidstate

import (
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tidemq/tide/broker/internal/clock"
)

// MaxRuns is how many stored runs (a single send or a batch) the table
// remembers per (producer, queue), as Kafka keeps the last 5 batches: a
// retry of any of them is recognised with its original offsets.
const MaxRuns = 5

// Errors of Check. The broker maps them to response codes.
var (
	// ErrFenced: the stamp's epoch is older than the producer's.
	ErrFenced = errors.New("producer fenced")
	// ErrOutOfOrder: the sequences overlap a stored run partly.
	ErrOutOfOrder = errors.New("sequence out of order")
	// ErrForgotten: the sequence is below the remembered window, so the
	// table cannot tell a retry from a new message (the broker looks the
	// message up in its index then).
	ErrForgotten = errors.New("sequence below the remembered window")
)

// Run is one stored run of consecutive sequences in one queue.
type Run struct {
	FirstSeq    int64   `json:"seq"`
	QueueOffset int64   `json:"qo"`   // queue offset of FirstSeq
	Phys        []int64 `json:"phys"` // commit log offset of each message
	Born        int64   `json:"born"` // born timestamp (batch items share it)
	End         int64   `json:"end"`  // commit log end of the last message
}

// Count returns the number of messages in the run.
func (r *Run) Count() int64 { return int64(len(r.Phys)) }

// QueueKey names a queue.
type QueueKey struct {
	Topic   string
	QueueID int32
}

type queueState struct {
	mu    sync.Mutex // held by the sender across Check, append and Record
	runs  []Run      // sorted by FirstSeq, at most MaxRuns
	floor int64      // sequences below were evicted: unknown
	epoch int64      // the epoch runs belong to
}

type producer struct {
	epoch    int64
	lastUsed int64 // Unix ms
	queues   map[QueueKey]*queueState
}

// Table is the state of every producer id. Safe for concurrent use.
type Table struct {
	mu        sync.Mutex
	producers map[int64]*producer
	now       func() time.Time
}

// New returns an empty table.
func New() *Table {
	return &Table{producers: map[int64]*producer{}, now: clock.Now}
}

// StableID is the producer id of a stable producer: derived from its
// group and instance name, so every broker and every restart gives it the
// same id. Stable ids have bit 62 set; fresh ones never do.
func StableID(group, instance string) int64 {
	h := fnv.New64a()
	h.Write([]byte(group))
	h.Write([]byte{0})
	h.Write([]byte(instance))
	return int64(h.Sum64()&(1<<62-1)) | 1<<62
}

// Init hands out a producer id and epoch. instance "" gives a fresh id;
// otherwise the stable id of (group, instance) with an epoch above any
// the table saw for it, which fences the previous holder at once. Epochs
// are wall-clock milliseconds, raised past the known one: a broker that
// lost the state (or a new master) still gives an epoch above an older
// instance's as long as clocks do not step back by more than the time
// between the two starts.
func (t *Table) Init(group, instance string) (id, epoch int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now().UnixMilli()
	if instance == "" {
		for {
			id = rand.Int64N(1<<62-1) + 1
			if _, taken := t.producers[id]; !taken {
				break
			}
		}
		t.producers[id] = &producer{epoch: now, lastUsed: now, queues: map[QueueKey]*queueState{}}
		return id, now
	}
	id = StableID(group, instance)
	p := t.producers[id]
	if p == nil {
		p = &producer{queues: map[QueueKey]*queueState{}}
		t.producers[id] = p
	}
	p.epoch = max(now, p.epoch+1)
	p.lastUsed = now
	return id, p.epoch
}

// Slot is a locked (producer, queue) slot between Check and Record.
type Slot struct {
	t   *Table
	q   *queueState
	id  int64
	key QueueKey
}

// Acquire locks the slot of (id, key) for a send with epoch and returns
// it; the caller must Release it. ErrFenced if epoch is older than the
// producer's. A newer epoch becomes the producer's (its queues start
// afresh). at (Unix ms) is when the producer was last seen: now for a
// send, the store time for a record read back.
func (t *Table) Acquire(id, epoch int64, key QueueKey, at int64) (*Slot, error) {
	t.mu.Lock()
	p := t.producers[id]
	if p == nil {
		p = &producer{epoch: epoch, queues: map[QueueKey]*queueState{}}
		t.producers[id] = p
	}
	if epoch < p.epoch {
		t.mu.Unlock()
		return nil, ErrFenced
	}
	p.epoch = epoch
	p.lastUsed = max(p.lastUsed, at)
	q := p.queues[key]
	if q == nil {
		// The key outlives the request: a topic sliced from a decoded
		// header would keep the whole header alive, per queue.
		key.Topic = strings.Clone(key.Topic)
		q = &queueState{epoch: epoch}
		p.queues[key] = q
	}
	t.mu.Unlock()
	q.mu.Lock()
	if q.epoch < epoch {
		q.runs, q.floor, q.epoch = nil, 0, epoch
	}
	return &Slot{t: t, q: q, id: id, key: key}, nil
}

// Release unlocks the slot.
func (s *Slot) Release() { s.q.mu.Unlock() }

// Lookup reports whether messages [seq, seq+n) were stored: the run
// holding them and the index of seq in it. ErrForgotten when seq is below
// the remembered window, ErrOutOfOrder when [seq, seq+n) overlaps a run
// partly.
func (s *Slot) Lookup(seq int64, n int) (run *Run, idx int, err error) {
	return s.q.lookup(seq, int64(n))
}

func (q *queueState) lookup(seq, n int64) (*Run, int, error) {
	for i := range q.runs {
		r := &q.runs[i]
		end := r.FirstSeq + r.Count()
		if seq >= r.FirstSeq && seq+n <= end {
			return r, int(seq - r.FirstSeq), nil
		}
		if seq < end && seq+n > r.FirstSeq {
			return nil, 0, ErrOutOfOrder
		}
	}
	if seq < q.floor {
		return nil, 0, ErrForgotten
	}
	return nil, 0, nil
}

// Forget drops the run (found by Lookup) whose records are no longer in
// the commit log (truncated by a failover), so its sequences count as
// never stored.
func (s *Slot) Forget(r *Run) {
	for i := range s.q.runs {
		if &s.q.runs[i] == r {
			s.q.runs = append(s.q.runs[:i], s.q.runs[i+1:]...)
			return
		}
	}
}

// Record remembers a stored run; the table owns r.Phys from then on.
// Records already known are ignored, so the send path and the follower
// may both record the same messages.
func (s *Slot) Record(r Run) { s.q.record(r, false) }

// record adds r. With merge (records read back one by one) a record that
// continues a run in the log (adjacent, next sequence and queue offset,
// same born time: the items of one batch) extends that run.
func (q *queueState) record(r Run, merge bool) {
	if len(r.Phys) == 0 {
		return
	}
	if found, _, err := q.lookup(r.FirstSeq, r.Count()); found != nil || err != nil {
		return
	}
	for i := range q.runs {
		if !merge {
			break
		}
		p := &q.runs[i]
		if p.FirstSeq+p.Count() == r.FirstSeq && p.End == r.Phys[0] && p.Born == r.Born &&
			p.QueueOffset+p.Count() == r.QueueOffset {
			p.Phys = append(p.Phys, r.Phys...)
			p.End = r.End
			return
		}
	}
	q.runs = append(q.runs, r)
	sort.Slice(q.runs, func(i, j int) bool { return q.runs[i].FirstSeq < q.runs[j].FirstSeq })
	if n := len(q.runs) - MaxRuns; n > 0 {
		// Evict in place: re-slicing from the front would walk the array,
		// reallocate it every few records and keep evicted runs' Phys.
		for _, ev := range q.runs[:n] {
			q.floor = max(q.floor, ev.FirstSeq+ev.Count())
		}
		copy(q.runs, q.runs[n:])
		clear(q.runs[MaxRuns:])
		q.runs = q.runs[:MaxRuns]
	}
}

// Apply records a stamped message read back from the commit log (the
// follower): a message of an older epoch than the producer's is ignored,
// a newer epoch becomes the producer's.
func (t *Table) Apply(id, epoch int64, key QueueKey, r Run, storeTime int64) {
	s, err := t.Acquire(id, epoch, key, storeTime)
	if err != nil {
		return
	}
	defer s.Release()
	s.q.record(r, true)
}

// Truncate forgets every record past end, the commit log end after a
// truncation (a run keeps the records before end).
func (t *Table) Truncate(end int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.producers {
		for _, q := range p.queues {
			q.mu.Lock()
			kept := q.runs[:0]
			for _, r := range q.runs {
				if r.End > end { // keep the records that end by end
					n := 0
					for n+1 < len(r.Phys) && r.Phys[n+1] <= end {
						n++
					}
					if n == 0 || r.Phys[0] >= end {
						continue
					}
					r.Phys, r.End = r.Phys[:n], r.Phys[n]
				}
				kept = append(kept, r)
			}
			q.runs = kept
			q.mu.Unlock()
		}
	}
}

// Expire removes the producers idle for longer than idle and returns how
// many it removed.
func (t *Table) Expire(idle time.Duration) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	cut := t.now().Add(-idle).UnixMilli()
	n := 0
	for id, p := range t.producers {
		if p.lastUsed < cut {
			delete(t.producers, id)
			n++
		}
	}
	return n
}

// Len returns the number of producer ids known.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.producers)
}
