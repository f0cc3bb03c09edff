package pidstate

import (
	"errors"
	"log/slog"
	"strconv"
	"sync"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Log is the part of the store the follower reads.
type Log interface {
	// ReadCommitLog returns a copy of up to max bytes from offset, never
	// crossing a segment end.
	ReadCommitLog(offset int64, max int) ([]byte, error)
	MaxPhyOffset() int64
	MinPhyOffset() int64
}

// Viewer is a Log that can also lend its bytes without a copy (the
// store's ViewCommitLog): b is valid only during fn. CatchUp reads
// through it when the Log has it, since it only parses what it reads and
// copies the few fields it keeps.
type Viewer interface {
	ViewCommitLog(offset int64, max int, fn func(b []byte) error) error
}

// readChunk bounds one read; it exceeds the largest record (4 MiB body
// plus properties and header), so a whole record always fits.
const readChunk = 16 << 20

// Follower applies the stamped records of the commit log to a table, from
// a starting offset on. The send path records its own appends directly;
// the follower makes the state what the log says after a restart (from
// the snapshot's offset), on a slave (so a promoted slave has it) and
// after a truncation. Methods are safe for concurrent use.
type Follower struct {
	t        *Table
	log      Log
	fileSize int64
	logger   *slog.Logger

	mu      sync.Mutex
	scanned int64 // everything below is applied
	hookEnd int64 // end of the last dispatched record Drain looked at
	spare   []pending

	pmu  sync.Mutex // guards pend; never held while taking mu
	pend []pending
	kick chan struct{}
}

// Bounds of the dispatched-records queue: Drain is asked for at drainAt
// entries; past maxPending records are dropped (and read back from the
// log by CatchUp).
const (
	drainAt    = 4096
	maxPending = 1 << 16
)

// pending is a dispatched record not yet applied, or a run of unstamped
// ones (phy to end).
type pending struct {
	phy, end  int64
	stamped   bool
	id, epoch int64
	key       QueueKey
	run       Run
	storeTS   int64
}

// NewFollower returns a follower of log (segments of fileSize bytes) that
// starts applying at from.
func NewFollower(t *Table, log Log, fileSize, from int64, logger *slog.Logger) *Follower {
	return &Follower{t: t, log: log, fileSize: fileSize, scanned: from, logger: logger, kick: make(chan struct{}, 1)}
}

// Scanned returns the offset below which every record is applied.
func (f *Follower) Scanned() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.scanned
}

// Truncated tells the follower that the commit log was cut at end (a
// demoted master dropping what the new master lacks), before anything is
// appended past it again: the table forgets the runs past end and the
// records appended from end on are applied. CatchUp notices a shorter log
// by itself, but not one that grew back past the old end meanwhile.
func (f *Follower) Truncated(end int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if end < f.scanned {
		f.t.Truncate(end)
		f.scanned = end
	}
}

// CatchUp applies every record up to the commit log's current end (a
// record still arriving by replication waits for the next call) and
// returns the offset reached. A commit log shorter than what was applied
// (truncated by a failover) makes the table forget the runs past its end.
func (f *Follower) CatchUp() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drainLocked()
	end := f.log.MaxPhyOffset()
	if end < f.scanned {
		f.logger.Info("idempotent producers: commit log truncated, forgetting runs past its end", "from", f.scanned, "to", end)
		f.t.Truncate(end)
		f.scanned = end
	}
	f.scanned = max(f.scanned, f.log.MinPhyOffset())
	for f.scanned < end {
		var n int
		var empty, stop bool
		err := f.read(f.scanned, func(b []byte) error {
			if empty = len(b) == 0; !empty {
				n, stop = f.applyChunk(b)
			}
			return nil
		})
		if err != nil {
			if m := f.log.MinPhyOffset(); f.scanned < m { // removed meanwhile
				f.scanned = m
				continue
			}
			f.logger.Error("idempotent producers: read commit log", "offset", f.scanned, "err", err)
			return f.scanned
		}
		if empty {
			break
		}
		f.scanned += int64(n)
		if stop {
			break
		}
	}
	return f.scanned
}

// read calls fn with up to readChunk bytes of the log from offset, lent
// (Viewer) or copied.
func (f *Follower) read(offset int64, fn func(b []byte) error) error {
	if v, ok := f.log.(Viewer); ok {
		return v.ViewCommitLog(offset, readChunk, fn)
	}
	b, err := f.log.ReadCommitLog(offset, readChunk)
	if err != nil {
		return err
	}
	return fn(b)
}

// Dispatched hands over a record the store's dispatcher just passed
// (store.RecordListener) at commit log offset phy. It never blocks on the
// table: the dispatcher must not wait for a sender that holds a
// (producer, queue) slot, and a sender may wait for the dispatcher
// (findStored). The record is queued (a run of unstamped records as one
// entry) and applied by the next Drain or CatchUp; when the queue is full
// it is dropped, and CatchUp reads the gap from the log instead.
func (f *Follower) Dispatched(phy int64, v *protocol.RecordView) {
	e := pending{phy: phy, end: phy + int64(v.Size)}
	if raw, ok := protocol.PropertyBytes(v.Properties, protocol.PropProducerStamp); ok {
		if st, err := protocol.ParseProducerStamp(string(raw)); err == nil {
			e.stamped = true
			e.id, e.epoch, e.run, e.storeTS = st.ProducerID, st.Epoch, f.run(phy, v, st), v.StoreTimestamp
			e.key = recordQueue(v)
		}
	}
	f.pmu.Lock()
	defer f.pmu.Unlock()
	if n := len(f.pend); !e.stamped && n > 0 && !f.pend[n-1].stamped && f.pend[n-1].end == phy {
		f.pend[n-1].end = e.end
		return
	}
	if len(f.pend) >= maxPending {
		return // CatchUp reads what is dropped from the log
	}
	f.pend = append(f.pend, e)
	if len(f.pend) == drainAt {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
}

// Kick is signalled when enough dispatched records wait that Drain
// should run before the next periodic CatchUp.
func (f *Follower) Kick() <-chan struct{} { return f.kick }

// Drain applies the queued dispatched records that continue what is
// applied and returns the offset reached.
func (f *Follower) Drain() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drainLocked()
	return f.scanned
}

func (f *Follower) drainLocked() {
	f.pmu.Lock()
	batch := f.pend
	f.pend = f.spare[:0]
	f.pmu.Unlock()
	for _, e := range batch {
		// The jump over a segment's blank tail is taken only when the
		// previous dispatched record ended where the follower stands, so
		// no record of the current segment can have been skipped.
		next := e.phy == f.scanned ||
			(f.hookEnd == f.scanned && e.phy%f.fileSize == 0 && e.phy > f.scanned && e.phy/f.fileSize == f.scanned/f.fileSize+1)
		f.hookEnd = e.end
		if !next {
			continue // applied already, or past a gap CatchUp reads
		}
		if e.stamped {
			f.t.Apply(e.id, e.epoch, e.key, e.run, e.storeTS)
		}
		f.scanned = e.end
	}
	clear(batch)
	f.spare = batch
}

// applyChunk applies// applyChunk applies the whole records at the start of b (read at
// f.scanned) and returns how far it got; stop means wait for more data.
func (f *Follower) applyChunk(b []byte) (n int, stop bool) {
	pos := 0
	for pos < len(b) {
		v, err := protocol.ViewRecord(b[pos:], false)
		switch {
		case err == nil:
			f.apply(f.scanned+int64(pos), &v)
			pos += int(v.Size)
		case errors.Is(err, protocol.ErrBlank):
			return int(f.nextSegment(f.scanned+int64(pos)) - f.scanned), false
		case errors.Is(err, protocol.ErrTruncated) && (f.scanned+int64(len(b)))%f.fileSize != 0:
			return pos, true // the rest of a replicated record is still coming
		default:
			at := f.scanned + int64(pos)
			f.logger.Error("idempotent producers: invalid record, skipping to the next segment", "offset", at, "err", err)
			return int(f.nextSegment(at) - f.scanned), false
		}
	}
	return pos, false
}

func (f *Follower) nextSegment(off int64) int64 { return off - off%f.fileSize + f.fileSize }

// apply records one stamped record read from the log.
func (f *Follower) apply(phy int64, v *protocol.RecordView) {
	raw, ok := protocol.PropertyBytes(v.Properties, protocol.PropProducerStamp)
	if !ok {
		return
	}
	st, err := protocol.ParseProducerStamp(string(raw))
	if err != nil {
		return
	}
	f.t.Apply(st.ProducerID, st.Epoch, recordQueue(v), f.run(phy, v, st), v.StoreTimestamp)
}

// run is the one-message run of a stamped record.
func (f *Follower) run(phy int64, v *protocol.RecordView, st protocol.ProducerStamp) Run {
	return Run{FirstSeq: st.Sequence, QueueOffset: v.QueueOffset, Phys: []int64{phy}, Born: v.BornTimestamp, End: phy + int64(v.Size)}
}

// recordQueue is the queue a record was sent to: its real topic and queue
// when it was diverted (delayed, timer, transactional half).
func recordQueue(v *protocol.RecordView) QueueKey {
	key := QueueKey{Topic: string(v.Topic), QueueID: v.QueueID}
	if rt, ok := protocol.PropertyBytes(v.Properties, protocol.PropRealTopic); ok && len(rt) > 0 {
		key.Topic = string(rt)
		if rq, ok := protocol.PropertyBytes(v.Properties, protocol.PropRealQueueID); ok {
			if q, err := strconv.ParseInt(string(rq), 10, 32); err == nil {
				key.QueueID = int32(q)
			}
		}
	}
	return key
}
