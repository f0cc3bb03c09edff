package mqclient

import (
	"context"
	"time"
)

// The PushConsumer's offset commits: every WithCommitInterval (commitLoop),
// the final one of a queue it loses (commitFinal, from the rebalancer's
// finishDrop) and those of Shutdown. A queue's commits are serialised by
// its commitMu and never pass an unfinished message (processQueue).

// commitLoop commits every owned queue's offset each WithCommitInterval.
func (pc *PushConsumer) commitLoop() {
	defer pc.loops.Done()
	t := time.NewTicker(pc.s.commitInterval)
	defer t.Stop()
	for {
		select {
		case <-pc.stop:
			return
		case <-t.C:
			ctx, cancel := pc.ctx()
			pc.commitAll(ctx)
			cancel()
		}
	}
}

// commitAll commits the offset of every owned queue and flushes the store.
func (pc *PushConsumer) commitAll(ctx context.Context) {
	pc.mu.Lock()
	pqs := make([]*processQueue, 0, len(pc.queues))
	for _, pq := range pc.queues {
		pqs = append(pqs, pq)
	}
	pc.mu.Unlock()
	for _, pq := range pqs {
		pc.commitQueue(ctx, pq)
	}
	pc.offsets.flush()
}

// commitQueue stores pq's offset if it moved since the last commit. It is
// a no-op once the queue's final commit was made (commitFinal).
func (pc *PushConsumer) commitQueue(ctx context.Context, pq *processQueue) error {
	pq.commitMu.Lock()
	defer pq.commitMu.Unlock()
	return pc.commitLocked(ctx, pq)
}

func (pc *PushConsumer) commitLocked(ctx context.Context, pq *processQueue) error {
	if pq.released {
		return nil
	}
	if pc.s.ordered && !pq.lockValid() {
		// Not the queue's owner now (lock lost, or regained and not yet
		// reset to the committed offset): another member may have moved
		// the offset past this member's position, which a write would
		// undo. What finished since the last commit is redelivered.
		return nil
	}
	off, changed, rewound := pq.commitOffset()
	if !changed {
		return nil
	}
	// Forward-only unless the broker moved this member back: for a moment
	// in a rebalance two members own the queue, and the commit of the one
	// that is behind must not undo the other's (the broker keeps the
	// higher offset; an Apache RocketMQ broker takes every commit). A
	// PULL_OFFSET_MOVED back (the queue lost its tail) must be written
	// as it is, or the group would later skip what is stored there anew.
	if err := pc.offsets.write(ctx, pq.q, off, !rewound); err != nil {
		pc.s.logger.Warn("mqclient: commit offset", "queue", pq.q, "offset", off, "err", err)
		return err
	}
	pq.committed(off, rewound)
	return nil
}

// commitFinal makes the last commit of a dropped queue before it is
// released to another member: it retries a failed write a few times
// (the next owner starts from this offset; a lost commit redelivers what
// was finished since the previous one), then stops every later commit of
// pq.
func (pc *PushConsumer) commitFinal(ctx context.Context, pq *processQueue) {
	pq.commitMu.Lock()
	defer pq.commitMu.Unlock()
	for attempt := 0; attempt < 3 && ctx.Err() == nil; attempt++ {
		if pc.commitLocked(ctx, pq) == nil {
			break
		}
		select {
		case <-time.After(pc.s.pullBackoff):
		case <-ctx.Done():
		}
	}
	pq.released = true
}
