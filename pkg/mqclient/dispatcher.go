package mqclient

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// dispatcher runs a PushConsumer's handlers on what the puller pulled:
// concurrent consumers get one task per batch, ordered ones a line per
// key with one task per busy key; at most WithConcurrency handlers run
// at once (sem). It retries failed messages (locally for ordered
// consumers, through the broker's retry topic or DLQ otherwise: sendBack).
// Safe for concurrent use; its tasks are counted in each processQueue's
// tasks, which the rebalancer and Shutdown wait for.
type dispatcher struct {
	s     *settings
	group string
	c     *Client
	// subs returns the consumer's subscription of a topic (a retry-topic
	// message goes to its original topic's handler).
	subs func(topic string) *subscription
	sem  chan struct{} // handler slots
	// ctx is the handlers' context, cancelled when Shutdown stops waiting.
	ctx    context.Context
	cancel context.CancelFunc
}

func newDispatcher(s *settings, group string, c *Client, subs func(string) *subscription) *dispatcher {
	d := &dispatcher{s: s, group: group, c: c, subs: subs, sem: make(chan struct{}, s.concurrency)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	return d
}

// dispatch starts handlers for newly pulled messages (all of pq's queue,
// in queue order). Concurrent consumers start one task per batch: a run of
// consecutive messages for the same subscription, one message long unless
// it has a BatchHandler. Ordered ones append to the messages' key lines
// and start a task for each idle key, unless generation gen, the one
// msgs were pulled in, was superseded meanwhile (relock).
func (d *dispatcher) dispatch(pq *processQueue, gen uint64, msgs []*MessageExt) {
	if !d.s.ordered {
		for len(msgs) > 0 {
			sub := d.target(pq, msgs[0])
			n, i := min(d.batchSize(sub), len(msgs)), 1
			for i < n && d.target(pq, msgs[i]) == sub {
				i++
			}
			batch := msgs[:i:i]
			msgs = msgs[i:]
			pq.tasks.Add(1)
			go d.runConcurrent(pq, sub, batch)
		}
		return
	}
	entries := make([]lineEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = lineEntry{m: m, sub: d.target(pq, m)}
	}
	pq.mu.Lock()
	if pq.gen != gen {
		for _, m := range msgs {
			pq.forget(m)
		}
		pq.mu.Unlock()
		return
	}
	var start []string
	for _, e := range entries {
		k := e.m.Key()
		pq.keys[k] = append(pq.keys[k], e)
		if !pq.busy[k] {
			pq.busy[k] = true
			start = append(start, k)
		}
	}
	pq.mu.Unlock()
	for _, k := range start {
		pq.tasks.Add(1)
		go d.runOrdered(pq, k)
	}
}

// target returns the subscription whose handler takes m: pq's own, or for
// the retry topic the one of m's original topic (nil if there is none).
func (d *dispatcher) target(pq *processQueue, m *MessageExt) *subscription {
	if pq.sub.handler != nil || pq.sub.batch != nil {
		return pq.sub
	}
	return d.subs(m.Topic)
}

// batchSize is the most messages one call of sub's handler takes.
func (d *dispatcher) batchSize(sub *subscription) int {
	if sub != nil && sub.batch != nil {
		return d.s.consumeBatchSize
	}
	return 1
}

// consume runs sub's handler on msgs: all of them for a BatchHandler, the
// only one for a Handler. The handler gets its own slice, so that one
// that keeps it cannot see the retry bookkeeping.
func (d *dispatcher) consume(sub *subscription, msgs []*MessageExt) error {
	switch {
	case sub != nil && sub.batch != nil:
		return callBatch(d.ctx, sub.batch, slices.Clone(msgs))
	case sub != nil && sub.handler != nil:
		return call(d.ctx, sub.handler, msgs[0])
	}
	return fmt.Errorf("mqclient: no handler for topic %s", msgs[0].Topic)
}

// acquire takes a handler slot; false if the queue was dropped meanwhile.
func (d *dispatcher) acquire(pq *processQueue) bool {
	select {
	case d.sem <- struct{}{}:
	case <-pq.dropped:
		return false
	}
	if pq.isDropped() {
		<-d.sem
		return false
	}
	return true
}

func (d *dispatcher) backoff(attempt int) time.Duration {
	wait := d.s.retryBackoff
	for i := 0; i < attempt && wait < d.s.maxRetryBackoff; i++ {
		wait *= 2
	}
	return min(wait, d.s.maxRetryBackoff)
}

// runConcurrent handles one batch of a concurrent consumer (one handler
// slot for the whole batch) until every message is acknowledged or sent
// back, or its queue is dropped (then the rest stay pending and are
// redelivered to the queue's next owner). A failed batch is sent back
// message by message; the ones the broker refused are retried locally,
// together, after a backoff.
func (d *dispatcher) runConcurrent(pq *processQueue, sub *subscription, msgs []*MessageExt) {
	defer pq.tasks.Done()
	for attempt := 0; ; attempt++ {
		if !d.acquire(pq) {
			return
		}
		err := d.consume(sub, msgs)
		<-d.sem
		if err == nil {
			pq.finish(msgs...)
			return
		}
		if d.s.model == Broadcasting {
			for _, m := range msgs {
				d.s.logger.Warn("mqclient: broadcast message failed, dropped", "msgId", m.MsgID, "err", err)
			}
			pq.finish(msgs...)
			return
		}
		var left []*MessageExt
		for _, m := range msgs {
			if serr := d.sendBack(d.ctx, m, 0); serr != nil {
				d.s.logger.Debug("mqclient: send back failed, retrying locally", "msgId", m.MsgID, "err", serr)
				left = append(left, m)
				continue
			}
			pq.finish(m)
		}
		if len(left) == 0 {
			return
		}
		msgs = left
		if !pq.sleep(d.backoff(attempt)) {
			return
		}
		for _, m := range msgs {
			m.ReconsumeTimes++
		}
	}
}

// runOrdered works through key k's line, one batch at a time, until the
// line is empty (the key is then idle again) or the queue is dropped.
func (d *dispatcher) runOrdered(pq *processQueue, k string) {
	defer pq.tasks.Done()
	for {
		msgs, sub, gen := d.nextOrdered(pq, k)
		if msgs == nil || !d.consumeOrdered(pq, sub, gen, msgs) {
			return
		}
	}
}

// nextOrdered takes the head of k's line and the messages after it that
// go to the same handler, up to its batch size, and the queue's current
// generation. With none left, or the queue dropped, it marks k idle and
// returns nil.
func (d *dispatcher) nextOrdered(pq *processQueue, k string) ([]*MessageExt, *subscription, uint64) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	line := pq.keys[k]
	if len(line) == 0 || pq.isDropped() {
		delete(pq.busy, k)
		return nil, nil, 0
	}
	sub := line[0].sub
	n, i := min(d.batchSize(sub), len(line)), 1
	for i < n && line[i].sub == sub {
		i++
	}
	msgs := make([]*MessageExt, i)
	for j := range msgs {
		msgs[j] = line[j].m
	}
	if i == len(line) {
		delete(pq.keys, k)
	} else {
		pq.keys[k] = line[i:]
	}
	return msgs, sub, pq.gen
}

// consumeOrdered handles one batch of a key in place, retrying it whole
// with backoff until success or, after WithMaxReconsumeTimes attempts,
// the DLQ. It reports false if the queue was dropped first, or its lock
// was lost and regained since the batch was taken from its line (gen is
// stale: the queue restarts from the committed offset, resync); the
// unfinished messages then stay pending.
func (d *dispatcher) consumeOrdered(pq *processQueue, sub *subscription, gen uint64, msgs []*MessageExt) bool {
	for attempt := 1; ; attempt++ {
		if !d.acquireOrdered(pq, gen) {
			return false
		}
		err := d.consume(sub, msgs)
		<-d.sem
		if err == nil {
			pq.finish(msgs...)
			return true
		}
		if attempt >= d.s.maxReconsumeTimes {
			// In queue order, and stopping at the first refusal: a later
			// message of the key never leaves before an earlier one.
			sent := 0
			for _, m := range msgs {
				if serr := d.sendBack(d.ctx, m, -1); serr != nil {
					d.s.logger.Warn("mqclient: ordered message: DLQ send failed, retrying", "msgId", m.MsgID, "err", serr)
					break
				}
				d.s.logger.Warn("mqclient: ordered message sent to DLQ", "msgId", m.MsgID, "key", m.Key(), "err", err)
				pq.finish(m)
				sent++
			}
			if msgs = msgs[sent:]; len(msgs) == 0 {
				return true
			}
		}
		if !pq.sleep(d.backoff(attempt - 1)) {
			return false
		}
		for _, m := range msgs {
			m.ReconsumeTimes++
		}
	}
}

// acquireOrdered waits until generation gen of pq may start a handler
// (runnable) and takes a handler slot; false if the queue was dropped or
// gen superseded first.
func (d *dispatcher) acquireOrdered(pq *processQueue, gen uint64) bool {
	for {
		for !pq.runnable(gen) {
			if pq.stale(gen) || !pq.sleep(100*time.Millisecond) {
				return false
			}
		}
		if !d.acquire(pq) {
			return false
		}
		if pq.runnable(gen) {
			return true
		}
		<-d.sem // the lock was lost while waiting for the slot
	}
}

// sendBack hands a failed message to the broker (CONSUMER_SEND_MSG_BACK):
// to the retry topic, or with delayLevel -1 straight to the DLQ.
func (d *dispatcher) sendBack(ctx context.Context, m *MessageExt, delayLevel int32) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.s.requestTimeout)
	defer cancel()
	addr, err := d.c.masterAddr(ctx, m.Queue.BrokerName, m.Queue.Topic)
	if err != nil {
		addr = m.StoreHost
	}
	h := protocol.ConsumerSendMsgBackRequestHeader{
		Offset: m.CommitLogOffset, Group: d.group, DelayLevel: delayLevel,
		OriginMsgID: m.MsgID, OriginTopic: m.Topic, MaxReconsumeTimes: int32(d.s.maxReconsumeTimes),
	}
	resp, err := d.c.invoke(ctx, addr, protocol.NewRequest(protocol.ConsumerSendMsgBack, h.Encode(), nil), d.s.requestTimeout)
	if err != nil {
		return err
	}
	return resp.Err()
}
