package mqclient

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// lock asks the queues' brokers to lock them for this client and returns
// the ones now held.
func (pc *PushConsumer) lock(ctx context.Context, qs []Queue) (map[Queue]bool, error) {
	got := map[Queue]bool{}
	var errs []error
	for broker, list := range byBroker(qs) {
		addr, err := pc.c.masterAddr(ctx, broker, list[0].Topic)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		body := (&protocol.LockBatchRequestBody{ConsumerGroup: pc.group, ClientID: pc.c.clientID, MQSet: list}).Encode()
		resp, err := pc.c.invoke(ctx, addr, protocol.NewRequest(protocol.LockBatchMQ, nil, body), pc.s.requestTimeout)
		if err == nil {
			err = resp.Err()
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		b, err := protocol.DecodeLockBatchResponseBody(resp.Body)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, q := range b.LockOKMQSet {
			got[q] = true
		}
	}
	return got, errors.Join(errs...)
}

// unlock releases queue locks; errors are logged (locks expire anyway).
func (pc *PushConsumer) unlock(ctx context.Context, qs []Queue) {
	for broker, list := range byBroker(qs) {
		addr, err := pc.c.masterAddr(ctx, broker, list[0].Topic)
		if err != nil {
			continue
		}
		body := (&protocol.LockBatchRequestBody{ConsumerGroup: pc.group, ClientID: pc.c.clientID, MQSet: list}).Encode()
		if _, err := pc.c.invoke(ctx, addr, protocol.NewRequest(protocol.UnlockBatchMQ, nil, body), pc.s.requestTimeout); err != nil {
			pc.s.logger.Debug("mqclient: unlock", "broker", broker, "err", err)
		}
	}
}

func byBroker(qs []Queue) map[string][]Queue {
	m := map[string][]Queue{}
	for _, q := range qs {
		m[q.BrokerName] = append(m[q.BrokerName], q)
	}
	return m
}

// locksLost handles the close of the connection to broker address addr
// (ordered consumers): the locks of the queues that broker serves are
// taken as lost -- the broker may have restarted and forgotten them, or
// given them to another member -- so no handler starts on those queues
// (and they are not pulled) until they are locked again; relocking them
// then resets them to the committed offset (processQueue.relock, resync).
// Handlers already running finish. Re-locking is tried at once, then with
// a backoff of up to one lock interval, after which lockLoop carries on.
func (pc *PushConsumer) locksLost(addr string) {
	pc.lockMu.Lock() // a renewal answered before the close must not win over it
	pc.mu.Lock()
	var lost []*processQueue
	for q, pq := range pc.queues {
		if a, ok := pc.c.cachedMasterAddr(q.BrokerName); ok && a == addr && !pq.isDropped() {
			lost = append(lost, pq)
		}
	}
	pc.mu.Unlock()
	for _, pq := range lost {
		pq.setLocked(false)
		pc.noteLock(pq.q, lockConnClosed, nil)
	}
	pc.lockMu.Unlock()
	if len(lost) == 0 {
		return
	}
	pc.s.logger.Info("mqclient: connection to broker closed; its queue locks are taken as lost until renewed",
		"group", pc.group, "broker", addr, "queues", len(lost))
	start := time.Now()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		select {
		case <-pc.stop:
			return
		default:
		}
		pc.renewLocks()
		relocked := true
		for _, pq := range lost {
			if !pq.isDropped() && !pq.lockValid() {
				relocked = false
			}
		}
		if relocked || time.Since(start) > pc.s.lockInterval {
			return
		}
		select {
		case <-pc.stop:
			return
		case <-time.After(wait):
		}
	}
}

// lockRetry is how soon a lock round that failed (a master unreachable or
// restarting, a queue not granted) is tried again, instead of waiting the
// whole lock interval: a master that comes back is locked within about a
// second, so ordered consumption resumes with it.
const lockRetry = time.Second

// lockLoop renews the locks of every assigned queue, every lockInterval,
// or after lockRetry when the last round did not lock every queue.
func (pc *PushConsumer) lockLoop() {
	defer pc.loops.Done()
	t := time.NewTimer(pc.s.lockInterval)
	defer t.Stop()
	for {
		select {
		case <-pc.stop:
			return
		case <-t.C:
		}
		next := pc.s.lockInterval
		if !pc.renewLocks() {
			next = min(next, lockRetry)
		}
		t.Reset(next)
	}
}

// renewLocks renews the broker locks of every assigned queue that is not
// being dropped, holding lockMu so no dropped queue is unlocked meanwhile.
// A queue whose lock was lost or had lapsed and is granted again is reset
// to the committed offset (resync). It reports whether every such queue
// is now locked.
func (pc *PushConsumer) renewLocks() bool {
	pc.lockMu.Lock()
	defer pc.lockMu.Unlock()
	pc.mu.Lock()
	var qs []Queue
	pqs := map[Queue]*processQueue{}
	for q, pq := range pc.queues {
		if !pq.isDropped() {
			qs = append(qs, q)
			pqs[q] = pq
		}
	}
	pc.mu.Unlock()
	if len(qs) == 0 {
		return true
	}
	ctx, cancel := pc.ctx()
	got, err := pc.lock(ctx, qs)
	cancel()
	all := err == nil
	for q, pq := range pqs {
		switch {
		case got[q]:
			pc.noteLock(q, "", nil)
			if gen, regained := pq.relock(); regained {
				go pc.resync(pq, gen)
			}
		case err == nil:
			all = false
			pq.setLocked(false)
			pc.noteLock(q, lockRefused, nil)
		default:
			// The broker did not answer for q: the lock may still be
			// held there; it lapses here after lockLease.
			all = false
			pc.noteLock(q, lockFailed, err)
		}
	}
	return all
}

// resync resets pq, whose lock was regained as generation gen (relock),
// to the offset committed on the broker: it waits for the handlers of the
// older generations to return (the messages they started were started
// under the lock; the rest was discarded), then reads the committed offset
// as a new owner does (startOffset) and resumes there. It gives up when pq
// is dropped, the consumer stops or gen is superseded.
func (pc *PushConsumer) resync(pq *processQueue, gen uint64) {
	ctx, cancel := pc.ctx()
	defer cancel()
	go func() {
		select {
		case <-pq.dropped:
		case <-pc.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	if !pq.waitIdle(ctx) {
		return
	}
	for {
		if pq.stale(gen) {
			return
		}
		rctx, rcancel := context.WithTimeout(ctx, pc.s.requestTimeout)
		off, err := pc.rb.startOffset(rctx, pq.q)
		rcancel()
		if err == nil {
			if pq.resume(gen, off) {
				pc.s.logger.Info("mqclient: queue lock regained after it was lost; resuming from the committed offset, messages pulled before are discarded",
					"group", pc.group, "queue", pq.q, "offset", off)
			}
			return
		}
		pc.s.logger.Warn("mqclient: queue lock regained; reading its committed offset failed, retrying", "group", pc.group, "queue", pq.q, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pc.s.pullBackoff):
		}
	}
}

// Why a queue's lock is not held, as noteLock logs it.
const (
	lockRefused    = "locked by another consumer of the group"
	lockFailed     = "lock request failed"
	lockConnClosed = "connection to the broker closed"
)

// lockNotes remembers, per queue, why its lock was last not held ("" when
// held), so a refusal is logged once per change, not once per retry.
type lockNotes struct {
	mu   sync.Mutex
	last map[Queue]string
}

// noteLock records q's lock state: reason is "" when the lock is held,
// else one of the lock* reasons (err, if any, is logged with it). A change
// to a lock not held is logged at Warn.
func (pc *PushConsumer) noteLock(q Queue, reason string, err error) {
	n := &pc.notes
	n.mu.Lock()
	prev, seen := n.last[q]
	if n.last == nil {
		n.last = map[Queue]string{}
	}
	n.last[q] = reason
	n.mu.Unlock()
	switch {
	case prev == reason && (seen || reason == ""):
	case reason == "" || reason == lockConnClosed:
		// A regained lock is logged by resync; closed connections by
		// locksLost, once for all their queues.
	default:
		args := []any{"group", pc.group, "queue", q, "reason", reason}
		if err != nil {
			args = append(args, "err", err)
		}
		pc.s.logger.Warn("mqclient: queue lock not held; the queue is not consumed until it is locked", args...)
	}
}
