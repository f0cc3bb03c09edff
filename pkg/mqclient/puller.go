package mqclient

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// puller runs one long-polling pull loop per queue the rebalancer
// assigned, pausing a queue above its flow-control limits (or, ordered,
// while its lock is not valid), and hands what it pulls to the
// dispatcher. A loop ends when its queue is dropped.
type puller struct {
	s     *settings
	group string
	c     *Client
	d     *dispatcher
	wg    sync.WaitGroup // running loops
}

// start runs pq's pull loop.
func (p *puller) start(pq *processQueue) {
	p.wg.Add(1)
	go p.loop(pq)
}

// loop pulls pq until it is dropped.
func (p *puller) loop(pq *processQueue) {
	defer p.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-pq.dropped:
			cancel()
		case <-ctx.Done():
		}
	}()
	wait := func(d time.Duration, wake <-chan struct{}) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-wake:
		case <-pq.dropped:
			return false
		}
		return true
	}
	for !pq.isDropped() {
		if pq.full(p.s.maxCachedCount, p.s.maxCachedBytes) {
			if !wait(50*time.Millisecond, pq.space) {
				return
			}
			continue
		}
		if p.s.ordered && !pq.lockValid() {
			if !wait(100*time.Millisecond, nil) {
				return
			}
			continue
		}
		if err := p.pullOnce(ctx, pq); err != nil {
			if pq.isDropped() {
				return
			}
			p.s.logger.Debug("mqclient: pull", "queue", pq.q, "err", err)
			if !wait(p.s.pullBackoff, nil) {
				return
			}
		}
	}
}

func (p *puller) pullOnce(ctx context.Context, pq *processQueue) error {
	pq.mu.Lock()
	off, bid, gen, resyncing := pq.nextPull, pq.brokerID, pq.gen, pq.resyncing
	pq.mu.Unlock()
	if resyncing {
		return nil // pullLoop waits for the lock to be valid again
	}
	addr, err := p.c.brokerAddr(pq.q.BrokerName, bid)
	if err != nil {
		if _, rerr := p.c.updateRoute(ctx, pq.q.Topic, false); rerr != nil {
			return err
		}
		if addr, err = p.c.brokerAddr(pq.q.BrokerName, bid); err != nil {
			return err
		}
	}
	sd := pq.sub.data
	h := protocol.PullMessageRequestHeader{
		ConsumerGroup:        p.group,
		Topic:                pq.q.Topic,
		QueueID:              pq.q.QueueID,
		QueueOffset:          off,
		MaxMsgNums:           int32(p.s.pullBatchSize),
		SysFlag:              protocol.PullSuspend | protocol.PullSubscription,
		SuspendTimeoutMillis: p.s.pollTimeout.Milliseconds(),
		Subscription:         sd.SubString,
		SubVersion:           0,
		ExpressionType:       sd.ExpressionType,
	}
	resp, err := p.c.invoke(ctx, addr, protocol.NewTypedRequest(protocol.PullMessage, &h, nil), p.s.pollTimeout+10*time.Second)
	if err != nil {
		return err
	}
	switch resp.Code {
	case protocol.Success, protocol.PullNotFound, protocol.PullRetryImmediately, protocol.PullOffsetMoved:
	default:
		return fmt.Errorf("mqclient: pull %s at %d: %w", pq.q, off, resp.Err())
	}
	var rh protocol.PullMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return fmt.Errorf("mqclient: pull response for %s: %w", pq.q, err)
	}
	var msgs []*MessageExt
	if resp.Code == protocol.Success {
		var keep func(string) bool
		if sd.ExpressionType == protocol.ExpressionTypeTag && !sd.MatchesAll() {
			keep = sd.MatchesTag
		}
		var n int
		var last int64
		msgs, n, last, err = decodePull(resp.Body, pq.q, off, keep)
		if err != nil {
			// Never skip what could not be decoded: deliver the records
			// before the bad one and pull again right after them.
			if n == 0 {
				return fmt.Errorf("mqclient: pull body of %s at %d: %w", pq.q, off, err)
			}
			p.s.logger.Warn("mqclient: truncated pull body", "queue", pq.q, "offset", off, "decoded", n, "err", err)
			rh.NextBeginOffset = last + 1
		}
	}
	pq.mu.Lock()
	if pq.isDropped() || pq.gen != gen {
		// Dropped, or pulled before the lock was lost and regained: the
		// queue restarts from the committed offset instead.
		pq.mu.Unlock()
		return nil
	}
	pq.brokerID = rh.SuggestWhichBrokerID
	pq.nextPull = rh.NextBeginOffset
	if resp.Code == protocol.PullOffsetMoved {
		p.s.logger.Warn("mqclient: offset moved", "queue", pq.q, "from", off, "to", rh.NextBeginOffset)
		pq.movedLocked(rh.NextBeginOffset)
	} else if rh.NextBeginOffset > pq.base {
		pq.base = rh.NextBeginOffset
	}
	for _, m := range msgs {
		pq.pending[m.QueueOffset] = m
		pq.bytes += len(m.Body)
	}
	pq.mu.Unlock()
	if len(msgs) > 0 {
		p.d.dispatch(pq, gen, msgs)
	}
	return nil
}
