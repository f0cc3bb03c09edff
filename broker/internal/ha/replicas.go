package ha

import (
	"context"
	"time"
)

// Replica is what the master knows of one connected slave that named its
// controller id (controller mode): the input of the SyncStateSet.
type Replica struct {
	BrokerID int64
	Acked    int64     // end of what it confirmed to have
	CaughtUp time.Time // the last time its report reached the master's end (zero time: never on this connection)
}

// Replicas returns the ready slaves that sent the controller-mode hello;
// a slave connected twice (a reconnect racing the old connection's end)
// appears once, with its best values.
func (s *Server) Replicas() []Replica {
	byID := map[int64]Replica{}
	for _, c := range *s.snapshot.Load() {
		id := c.id.Load()
		if id <= 0 || !c.ready.Load() {
			continue
		}
		r := Replica{BrokerID: id, Acked: c.acked.Load(), CaughtUp: time.Unix(0, c.reached.Load())}
		if o, ok := byID[id]; ok {
			r.Acked, r.CaughtUp = max(r.Acked, o.Acked), maxTime(r.CaughtUp, o.CaughtUp)
		}
		byID[id] = r
	}
	out := make([]Replica, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (s *Server) wakeAckWaiters() {
	s.ackMu.Lock()
	close(s.ackWake)
	s.ackWake = make(chan struct{})
	s.ackMu.Unlock()
}

// WaitAcks blocks until at least need of the slaves ids (controller ids)
// have acked the commit log up to offset (controller mode's
// inSyncReplicas / allAckInSyncStateSet). need <= 0 returns at once. It
// returns ErrFlushSlaveTimeout after SlaveTimeout, ctx.Err() when ctx
// ends, ErrClosed when the server closes.
func (s *Server) WaitAcks(ctx context.Context, offset int64, ids []int64, need int) error {
	if need <= 0 {
		return nil
	}
	t := time.NewTimer(s.opts.SlaveTimeout)
	defer t.Stop()
	s.Notify()
	for {
		s.ackMu.Lock()
		wake := s.ackWake
		s.ackMu.Unlock()
		if s.countAcked(offset, ids) >= need {
			return nil
		}
		select {
		case <-wake:
		case <-t.C:
			return ErrFlushSlaveTimeout
		case <-ctx.Done():
			return ctx.Err()
		case <-s.stop:
			return ErrClosed
		}
	}
}

func (s *Server) countAcked(offset int64, ids []int64) int {
	n := 0
	for _, id := range ids {
		if a, ok := s.Acked(id); ok && a >= offset {
			n++
		}
	}
	return n
}

// Acked returns the end of the commit log the slave with controller id
// id confirmed, the best over its ready connections (a reconnect may race
// the old connection's end); ok is false when no ready connection has
// that id. It allocates nothing: the store's dispatcher calls it (through
// the broker's confirm offset) on every wake.
func (s *Server) Acked(id int64) (acked int64, ok bool) {
	for _, c := range *s.snapshot.Load() {
		if c.id.Load() == id && c.ready.Load() {
			acked, ok = max(acked, c.acked.Load()), true
		}
	}
	return acked, ok
}
