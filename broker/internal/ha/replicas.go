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
	best := map[int64]int64{}
	for _, c := range *s.snapshot.Load() {
		if id := c.id.Load(); id > 0 && c.ready.Load() {
			best[id] = max(best[id], c.acked.Load())
		}
	}
	n := 0
	for _, id := range ids {
		if a, ok := best[id]; ok && a >= offset {
			n++
		}
	}
	return n
}
