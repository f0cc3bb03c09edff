package mqclient

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// rebalancer decides which queues of its subscriptions the PushConsumer
// owns: every WithRebalanceInterval, and at once when the broker reports
// a membership change (request). It asks a broker for the group's
// members, allocates with WithAllocateStrategy, drops the queues it lost
// (finishDrop: handlers finish, the final commit, the unlock) and adds the
// new ones (addQueue: lock when ordered, start offset, pull loop). It
// works on its consumer's subscriptions and queue table under the
// consumer's mu, and through its lock, offset and commit methods.
type rebalancer struct {
	pc      *PushConsumer
	s       *settings
	group   string
	c       *Client
	trigger chan struct{} // a rebalance is requested
}

// request asks for a rebalance now (the broker reported a membership
// change, or adding a queue failed); requests while one is pending merge.
func (rb *rebalancer) request() {
	select {
	case rb.trigger <- struct{}{}:
	default:
	}
}

// loop rebalances every WithRebalanceInterval and on request until the
// consumer stops.
func (rb *rebalancer) loop() {
	defer rb.pc.loops.Done()
	t := time.NewTicker(rb.s.rebalanceInterval)
	defer t.Stop()
	for {
		select {
		case <-rb.pc.stop:
			return
		case <-t.C:
		case <-rb.trigger:
		}
		ctx, cancel := rb.pc.ctx()
		rb.rebalance(ctx)
		cancel()
	}
}

// rebalance recomputes the queues of every subscription.
func (rb *rebalancer) rebalance(ctx context.Context) {
	rb.pc.mu.Lock()
	topics := make([]string, 0, len(rb.pc.subs))
	for t := range rb.pc.subs {
		topics = append(topics, t)
	}
	rb.pc.mu.Unlock()
	sort.Strings(topics)
	for _, t := range topics {
		if err := rb.rebalanceTopic(ctx, t); err != nil {
			rb.s.logger.Debug("mqclient: rebalance", "group", rb.group, "topic", t, "err", err)
		}
	}
}

// rebalanceTopic makes the owned queues of topic the allocation's.
func (rb *rebalancer) rebalanceTopic(ctx context.Context, topic string) error {
	r, err := rb.c.route(ctx, topic, false)
	if err != nil {
		return err
	}
	mine := r.sub
	if rb.s.model == Clustering {
		ids, err := rb.consumerIDs(ctx, r)
		if err != nil {
			return err
		}
		mine = rb.s.allocate.Allocate(slices.Clone(r.sub), ids, rb.c.clientID)
	}
	rb.updateQueues(ctx, topic, mine)
	return nil
}

// consumerIDs asks a broker of the topic for the group's members. When the
// caller is missing (its heartbeat has not arrived yet) it heartbeats and
// asks once more.
func (rb *rebalancer) consumerIDs(ctx context.Context, r *route) ([]string, error) {
	if len(r.data.BrokerDatas) == 0 {
		return nil, ErrBrokerNotFound
	}
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		bd := r.data.BrokerDatas[rand.IntN(len(r.data.BrokerDatas))]
		addr, err := rb.c.brokerAddr(bd.BrokerName, protocol.MasterID)
		if err != nil {
			return nil, err
		}
		h := protocol.ConsumerGroupHeader{ConsumerGroup: rb.group}
		resp, err := rb.c.invoke(ctx, addr, protocol.NewRequest(protocol.GetConsumerListByGroup, h.Encode(), nil), rb.s.requestTimeout)
		if err != nil {
			return nil, err
		}
		if resp.Code == protocol.Success && len(resp.Body) > 0 {
			b, err := protocol.DecodeGetConsumerListByGroupResponseBody(resp.Body)
			if err != nil {
				return nil, err
			}
			ids := b.ConsumerIDList
			sort.Strings(ids)
			// A client that restarted under the same id (a stable
			// instance name) may still be listed on its old, not yet
			// expired connection too: one id is one member, or the
			// allocation would leave the duplicate's queues to nobody.
			ids = slices.Compact(ids)
			if slices.Contains(ids, rb.c.clientID) {
				return ids, nil
			}
			last = fmt.Errorf("mqclient: %s not in the member list of %s", rb.c.clientID, rb.group)
		} else {
			last = fmt.Errorf("mqclient: consumer list of %s: %w", rb.group, resp.Err())
		}
		rb.c.sendHeartbeats(ctx)
	}
	return nil, last
}

// updateQueues makes topic's assigned queues equal mine: it drops the
// others (in the background: a dropped queue finishes its running
// handlers, commits and unlocks) and adds the new ones. A queue still
// being dropped is added by a later rebalance, so the two never overlap.
func (rb *rebalancer) updateQueues(ctx context.Context, topic string, mine []Queue) {
	want := map[Queue]bool{}
	for _, q := range mine {
		want[q] = true
	}
	var add []Queue
	rb.pc.mu.Lock()
	for q, pq := range rb.pc.queues {
		if q.Topic == topic && !want[q] && !pq.isDropped() {
			pq.drop()
			go rb.finishDrop(pq)
		}
	}
	for _, q := range mine {
		if _, ok := rb.pc.queues[q]; !ok {
			add = append(add, q)
		}
	}
	rb.pc.mu.Unlock()
	retry := false
	for _, q := range add {
		if err := rb.addQueue(ctx, q); err != nil {
			rb.s.logger.Debug("mqclient: add queue", "queue", q, "err", err)
			retry = true
		}
	}
	if retry {
		go func() {
			select {
			case <-time.After(time.Second):
				rb.request()
			case <-rb.pc.stop:
			}
		}()
	}
}

// finishDrop waits for a dropped queue's handlers, commits its offset,
// unlocks it (ordered) and forgets it.
func (rb *rebalancer) finishDrop(pq *processQueue) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	idle := pq.waitIdle(ctx)
	rb.pc.commitFinal(ctx, pq)
	rb.pc.lockMu.Lock()
	if rb.s.ordered && idle {
		rb.pc.unlock(ctx, []Queue{pq.q})
	}
	rb.pc.mu.Lock()
	if rb.pc.queues[pq.q] == pq {
		delete(rb.pc.queues, pq.q)
	}
	rb.pc.mu.Unlock()
	rb.pc.lockMu.Unlock()
	if rb.pc.state.Load() == stateRunning {
		rb.request()
	}
}

// addQueue takes q (locking it first when ordered), reads its start
// offset and starts its pull loop.
func (rb *rebalancer) addQueue(ctx context.Context, q Queue) error {
	rb.pc.mu.Lock()
	sub := rb.pc.subs[q.Topic]
	rb.pc.mu.Unlock()
	if sub == nil {
		return nil
	}
	pq := newProcessQueue(q, sub)
	if rb.s.ordered {
		ok, err := rb.pc.lock(ctx, []Queue{q})
		if err != nil {
			rb.pc.noteLock(q, lockFailed, err)
			return err
		}
		if !ok[q] {
			rb.pc.noteLock(q, lockRefused, nil)
			return fmt.Errorf("mqclient: queue %s is locked by another consumer", q)
		}
		rb.pc.noteLock(q, "", nil)
		pq.setLocked(true)
	}
	off, err := rb.startOffset(ctx, q)
	if err != nil {
		if rb.s.ordered {
			rb.pc.unlock(ctx, []Queue{q})
		}
		return err
	}
	pq.init(off)
	rb.pc.mu.Lock()
	if rb.pc.state.Load() != stateRunning {
		rb.pc.mu.Unlock()
		return ErrClosed
	}
	rb.pc.queues[q] = pq
	rb.pc.pull.start(pq)
	rb.pc.mu.Unlock()
	return nil
}

// startOffset is the stored offset of q, or the ConsumeFrom position.
func (rb *rebalancer) startOffset(ctx context.Context, q Queue) (int64, error) {
	off, err := rb.pc.offsets.read(ctx, q)
	if err != nil || off >= 0 {
		return off, err
	}
	if strings.HasPrefix(q.Topic, RetryTopicPrefix) {
		return 0, nil
	}
	switch rb.s.from {
	case ConsumeFromFirst:
		return rb.queueOffset(ctx, q, protocol.GetMinOffset, 0)
	case ConsumeFromTimestamp:
		return rb.queueOffset(ctx, q, protocol.SearchOffsetByTimestamp, rb.s.fromTimestamp.UnixMilli())
	}
	return rb.queueOffset(ctx, q, protocol.GetMaxOffset, 0)
}

// queueOffset asks q's master for an offset: the min, max or the one of
// timestamp ts (code).
func (rb *rebalancer) queueOffset(ctx context.Context, q Queue, code int16, ts int64) (int64, error) {
	addr, err := rb.c.masterAddr(ctx, q.BrokerName, q.Topic)
	if err != nil {
		return 0, err
	}
	var ext map[string]string
	if code == protocol.SearchOffsetByTimestamp {
		h := protocol.SearchOffsetRequestHeader{Topic: q.Topic, QueueID: q.QueueID, Timestamp: ts}
		ext = h.Encode()
	} else {
		h := protocol.QueueRequestHeader{Topic: q.Topic, QueueID: q.QueueID}
		ext = h.Encode()
	}
	resp, err := rb.c.invoke(ctx, addr, protocol.NewRequest(code, ext, nil), rb.s.requestTimeout)
	if err != nil {
		return 0, err
	}
	var oh protocol.OffsetResponseHeader
	if err := oh.Decode(resp.ExtFields); err != nil {
		return 0, fmt.Errorf("mqclient: offset of %s: %w (%w)", q, err, resp.Err())
	}
	return oh.Offset, nil
}
