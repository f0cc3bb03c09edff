package store

import (
	"errors"
	"fmt"

	"github.com/tidemq/tide/broker/internal/store/checkpoint"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Truncate cuts the store back to the commit log offset end, which must be
// a record boundary: a replica dropping what it holds beyond the point it
// shares with a new master (controller mode, docs/controller.md), or a
// new master dropping a torn replicated tail. Puts and replicated appends
// wait while it runs; the dispatcher and the queue flusher are paused.
// Afterwards the commit log ends at end, every consume queue ends with
// its last unit below end, the queue offset counters follow, dispatching
// resumes from end and the checkpoint never points past it, so a crash
// right after recovers to end too. Index entries past end are left: a
// query reads each hit's record and checks its key, so a stale entry
// finds nothing (or the record written later at that offset when it has
// the same key). end at or above MaxPhyOffset is a no-op.
func (s *Store) Truncate(end int64) error {
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closing.Load() {
		return ErrShuttingDown
	}
	if end >= s.cl.MaxOffset() {
		return nil
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	return s.truncateLocked(end)
}

// truncateLocked is Truncate with gate and runMu held.
func (s *Store) truncateLocked(end int64) error {
	s.dispatchAvailable() // queue counters below are read from the queues
	from := s.cl.MaxOffset()
	if err := s.cl.Truncate(end); err != nil {
		return fmt.Errorf("store: truncate commit log to %d: %w", end, err)
	}
	var units int64
	s.offMu.Lock()
	for _, q := range s.queues() {
		units += q.Truncate(end)
		s.qoff[queueKey{q.Topic(), q.ID()}] = q.MaxOffset()
	}
	s.offMu.Unlock()
	s.reputFrom = min(s.reputFrom, end)
	s.indexFrom = min(s.indexFrom, end)
	s.dispatched.Store(s.reputFrom)
	cp := s.lastCP
	cp.PhysicOffset = min(cp.PhysicOffset, end)
	cp.LogicsOffset = min(cp.LogicsOffset, end)
	if err := checkpoint.Save(s.cfg.checkpointPath(), cp); err != nil {
		return fmt.Errorf("store: checkpoint after truncation: %w", err)
	}
	s.lastCP = cp
	s.log.Warn("store truncated", "from", from, "to", end, "droppedBytes", from-end, "droppedUnits", units)
	return nil
}

// TakeWrites makes a replica's store a master's (controller mode): it
// dispatches what the dispatch limit allows, drops a torn record at the
// end of the commit log (replication cuts transfers at record boundaries,
// but a master may have died mid-record in another implementation), sets
// the queue offset counters past every whole record, dispatched or not
// (replicated appends do not move them; records above the dispatch limit,
// the old master's confirm offset, are dispatched later under the new
// master's) and lifts SetReadOnly. It returns the commit log end the new
// master's writes start at.
func (s *Store) TakeWrites() (int64, error) {
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closing.Load() {
		return 0, ErrShuttingDown
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	s.dispatchAvailable()
	whole, next := s.scanTail(s.reputFrom)
	if whole < s.cl.MaxOffset() {
		if err := s.truncateLocked(whole); err != nil {
			return 0, err
		}
	}
	s.offMu.Lock()
	for _, q := range s.queues() {
		s.qoff[queueKey{q.Topic(), q.ID()}] = q.MaxOffset()
	}
	for k, n := range next {
		s.qoff[k] = max(s.qoff[k], n)
	}
	s.offMu.Unlock()
	s.readOnly.Store(false)
	return s.cl.MaxOffset(), nil
}

// scanTail reads the records from from (a record boundary) to the commit
// log end without dispatching them. It returns the end of the last whole
// record (a torn or invalid record ends the scan) and, per queue, the
// queue offset after the last message it holds there. runMu held.
func (s *Store) scanTail(from int64) (whole int64, next map[queueKey]int64) {
	next = map[queueKey]int64{}
	for end := s.cl.MaxOffset(); from < end; {
		seg := from
		stop := false
		err := s.cl.View(seg, func(b []byte) error {
			if rest := end - seg; int64(len(b)) > rest {
				b = b[:rest]
			}
			pos := 0
			for pos < len(b) {
				v, err := protocol.ViewRecord(b[pos:], false)
				if errors.Is(err, protocol.ErrBlank) {
					from = s.cl.NextSegment(seg)
					return nil
				}
				if err != nil {
					stop = true
					return nil
				}
				if tx := protocol.TxType(v.SysFlag); tx != protocol.SysFlagTxPrepared && tx != protocol.SysFlagTxRollback {
					k := queueKey{string(v.Topic), v.QueueID}
					next[k] = max(next[k], v.QueueOffset+1)
				}
				pos += int(v.Size)
				from = seg + int64(pos)
			}
			return nil
		})
		if err != nil || stop || from == seg {
			break
		}
	}
	return from, next
}
