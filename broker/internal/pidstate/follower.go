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
}

// NewFollower returns a follower of log (segments of fileSize bytes) that
// starts applying at from.
func NewFollower(t *Table, log Log, fileSize, from int64, logger *slog.Logger) *Follower {
	return &Follower{t: t, log: log, fileSize: fileSize, scanned: from, logger: logger}
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
	end := f.log.MaxPhyOffset()
	if end < f.scanned {
		f.logger.Info("idempotent producers: commit log truncated, forgetting runs past its end", "from", f.scanned, "to", end)
		f.t.Truncate(end)
		f.scanned = end
	}
	f.scanned = max(f.scanned, f.log.MinPhyOffset())
	for f.scanned < end {
		b, err := f.log.ReadCommitLog(f.scanned, readChunk)
		if err != nil {
			if m := f.log.MinPhyOffset(); f.scanned < m { // removed meanwhile
				f.scanned = m
				continue
			}
			f.logger.Error("idempotent producers: read commit log", "offset", f.scanned, "err", err)
			return f.scanned
		}
		if len(b) == 0 {
			break
		}
		n, stop := f.applyChunk(b)
		f.scanned += int64(n)
		if stop {
			break
		}
	}
	return f.scanned
}

// applyChunk applies the whole records at the start of b (read at
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

// apply records one stamped record.
func (f *Follower) apply(phy int64, v *protocol.RecordView) {
	raw, ok := protocol.PropertyBytes(v.Properties, protocol.PropProducerStamp)
	if !ok {
		return
	}
	st, err := protocol.ParseProducerStamp(string(raw))
	if err != nil {
		return
	}
	key := QueueKey{Topic: string(v.Topic), QueueID: v.QueueID}
	if rt, ok := protocol.PropertyBytes(v.Properties, protocol.PropRealTopic); ok && len(rt) > 0 {
		key.Topic = string(rt)
		if rq, ok := protocol.PropertyBytes(v.Properties, protocol.PropRealQueueID); ok {
			if q, err := strconv.ParseInt(string(rq), 10, 32); err == nil {
				key.QueueID = int32(q)
			}
		}
	}
	f.t.Apply(st.ProducerID, st.Epoch, key, Run{
		FirstSeq: st.Sequence, QueueOffset: v.QueueOffset, Phys: []int64{phy}, Born: v.BornTimestamp, End: phy + int64(v.Size),
	}, v.StoreTimestamp)
}
