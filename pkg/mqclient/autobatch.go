package mqclient

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/remoting/workers"
)

// Auto-batching of SendAsync and of concurrent Send calls (WithAutoBatch;
// RocketMQ 5's autoBatch, Kafka's linger.ms and batch.size).
//
// SendAsync and Send put an eligible message into the open batch of its
// queue instead of sending it alone. A batch is sent (SEND_BATCH_MESSAGE,
// one request) when adding the next message would take it over the byte
// limit, when it reaches the limit, when the linger has passed since its
// first message, or when a request of the batcher to its broker ends and
// none to its own queue is left in flight (Nagle's rule per broker, as a
// group commit: a message goes at once, alone, only when nothing of the
// batcher is in flight to its broker, so a producer that sends rarely
// pays no linger; while a request is in flight the next ones gather
// behind it, those to other queues too); Shutdown sends every open batch
// at once. Per broker rather than per queue: with the per-queue rule the
// first message after a full batch found the next queue idle and went
// alone, so about every other request carried one message (a SYNC_FLUSH
// group commit covered 2.5 requests of 24 messages; now 1.2 of 25), and
// each request costs both sides CPU (docs/benchmarks/analysis.md, Levers,
// "Group commit under SYNC_FLUSH"). The broker stores a
// batch's messages with consecutive queue offsets in the order they
// joined it and answers with their broker ids and the first offset, from
// which each caller gets its own SendResult (its own MsgID, OffsetMsgID,
// QueueOffset) and the answer's status. A batch succeeds or fails as a
// whole: every caller of a failed batch gets the batch's error. A failed
// batch is retried as the same batch (WithRetries); with idempotent sends
// each message keeps its sequence in the queue, so a retry after a lost
// answer is recognised and nothing is stored twice.
//
// Send blocks until its own message's result, as without batching. A
// single goroutine's Sends each find their queue idle (the previous one
// was answered) and go at once, alone, from the caller's goroutine: one
// synchronous sender is not slowed down. Concurrent Sends while a request
// to their broker is in flight wait for one to end, then go together; where
// RocketMQ 5's ProduceAccumulator holds a synchronous send until its
// batch is full or holdMs (10 ms) passes, Nagle's rule sends as soon as
// the broker answers. SEND_OK means what it means for a lone message: the
// broker answers a batch only after the flush (SYNC_FLUSH) and the
// replication (SYNC_MASTER) of all of it, and a batch answered with
// FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE gives
// that status to each of its callers. A Send whose context ends while its
// message waits in a batch returns at once and the message is left out of
// the batch; once the batch is in flight it may be stored all the same,
// as a plain Send that times out may be.
//
// A topic whose batches leave with about one message each (a moving
// average of messages per batch under loneAverage over at least
// loneAfter batches) stops gathering: its messages go alone at once, as
// to an idle broker, and one in loneProbe still opens a batch to see
// whether company came back (a batch that gathers several lifts the
// average above the bar). A producer spreading 64 sends in flight over
// 1,000 topics put exactly one message in each batch, and each waited
// for a request to its broker to end before going alone anyway
// (docs/benchmarks/analysis.md, "Issue 21, target by target", the
// 1,000-topic row). A streak of single batches is not enough: a busy
// single topic has many among its batches of three.
//
// Messages without a ShardingKey (and without WithQueueSelector) stick to
// one queue of their topic while its batch is open, then the next batch
// takes the next queue (Kafka's sticky partitioner): round-robin per
// message would spread them over every queue and leave each batch nearly
// empty. Keyed messages join the batch of the queue their key selects and
// keep that queue on retries.
//
// Not batched, sent as without auto-batching: SendTo, SendBatch and
// SendOneway calls, delayed and timer messages (the broker refuses
// delayed batches), messages compressed by WithCompressOver (a batch has
// one system flag for all its messages), transactional messages,
// retry-topic messages, and messages whose topic's route the client has
// not fetched yet (a send must not block on the NameServers here).
//
// Batches, like separate SendAsync calls, are sent concurrently: the
// order between two batches of one queue is not guaranteed, only the
// order inside a batch. A goroutine that waits for each Send before the
// next keeps its order, as without batching.

// The lonely-topic rule: after loneAfter batches, a topic whose moving
// average of messages per batch (weight 1/8 per batch, kept in 1/16ths)
// is below loneAverage sends alone; one message in loneProbe opens a batch
// again. loneTopics bounds the topics remembered.
const (
	loneAfter   = 16
	loneAverage = 20 // 1.25 messages per batch, in 1/16ths
	loneProbe   = 64
	loneTopics  = 4096
)

// batchShape is a topic's moving average of messages per batch.
type batchShape struct {
	avg     int // in 1/16ths of a message
	batches int // counted up to loneAfter
	alone   int // messages sent alone since the last probe
}

// defaultAutoBatchBytes is the batch size limit when WithAutoBatch gives
// none: 32 KiB, RocketMQ 5's autoBatch default (Kafka's batch.size is 16 KiB).
const defaultAutoBatchBytes = 32 << 10

// batcher holds a producer's open batches, one per queue.
type batcher struct {
	p        *Producer
	linger   time.Duration
	maxBytes int

	mu   sync.Mutex
	open map[Queue]*lot
	busy map[Queue]int // batches (or lone messages) of the batcher in flight per queue
	// inflight counts busy per broker name: a message goes alone only
	// when nothing of the batcher is in flight to its broker
	inflight map[string]int
	sticky   map[string]Queue // topic → the queue its unkeyed messages join
	// shapes: per topic, how full its batches leave (the lonely-topic rule)
	shapes map[string]*batchShape
}

// lot is one open batch.
type lot struct {
	q     Queue
	keyed bool // a member has a key: the batch keeps its queue on retries
	calls []*pendingSend
	size  int // encoded batch bytes, stamps included
	timer *time.Timer
}

// pendingSend is one SendAsync or Send waiting in a batch.
type pendingSend struct {
	ctx context.Context
	msg *Message
	o   *outgoing
	cb  func(*SendResult, error) // SendAsync's
	// sync marks a Send: join gives it done when it joins a batch
	sync bool
	// done receives a Send's result (buffered: answering never blocks);
	// nil for SendAsync
	done chan sendOutcome
}

// sendOutcome is the result a waiting Send gets.
type sendOutcome struct {
	res *SendResult
	err error
}

func newBatcher(p *Producer, linger time.Duration, maxBytes int) *batcher {
	if maxBytes <= 0 {
		maxBytes = defaultAutoBatchBytes
	}
	return &batcher{p: p, linger: linger, maxBytes: min(maxBytes, p.s.maxMessageSize),
		open: map[Queue]*lot{}, busy: map[Queue]int{}, inflight: map[string]int{}, sticky: map[string]Queue{},
		shapes: map[string]*batchShape{}}
}

// batchable reports whether msg (encoded as o) may join a batch.
func batchable(msg *Message, o *outgoing) bool {
	return o.sysFlag == 0 && msg.DelayLevel == 0 && msg.DeliverAt.IsZero() &&
		o.props[protocol.PropTransactionPrepared] == "" &&
		!strings.HasPrefix(o.topic, protocol.RetryTopicPrefix)
}

// add puts a SendAsync into its queue's batch and reports whether it did;
// false leaves the send to the caller (not eligible, or no cached route).
// The batch then answers cb exactly once.
func (b *batcher) add(ctx context.Context, msg *Message, o *outgoing, cb func(*SendResult, error)) bool {
	r := b.eligible(msg, o)
	if r == nil {
		return false
	}
	// c is built again in the closure rather than shared with it: a
	// variable the closure captured by reference would go to the heap on
	// every call, also for the messages that join a batch (join copies
	// those to the heap itself)
	if q, alone, _ := b.join(pendingSend{ctx: ctx, msg: msg, o: o, cb: cb}, r); alone {
		// alone to an idle broker: SendAsync must not block on it
		workers.Shared().Go(func() {
			res, err := b.sendLone(ctx, o, q)
			b.answer(&pendingSend{ctx: ctx, msg: msg, o: o, cb: cb}, res, err)
			b.sent(q)
		})
	}
	return true
}

// sendSync is Send through the batcher: msg joins its queue's batch like
// a SendAsync and the caller waits for its own result. ok is false when
// msg may not be batched (then the caller sends it alone, as without
// auto-batching). A message to an idle broker is sent at once, alone and
// from the caller's goroutine, so a single synchronous sender (each Send
// waits for the previous one) never waits for a linger and pays no
// goroutine hand-off. When ctx ends while the message waits in an open
// batch, it is taken out of the batch before the batch is sent; when it
// ends while the batch is in flight, Send returns at once and the message
// may still be stored, as a plain Send that times out may be.
func (b *batcher) sendSync(ctx context.Context, msg *Message, o *outgoing) (res *SendResult, err error, ok bool) {
	r := b.eligible(msg, o)
	if r == nil {
		return nil, nil, false
	}
	if err := ctx.Err(); err != nil { // joining a batch would only be undone
		return nil, sendEnded(o.topic, err), true
	}
	// Shutdown waits for it as for a SendAsync: it sends the open batches
	// and must not close the connections under them
	b.p.async.Add(1)
	q, alone, c := b.join(pendingSend{ctx: ctx, msg: msg, o: o, sync: true}, r)
	if alone {
		res, err = b.sendLone(ctx, o, q)
		b.sent(q)
		b.p.async.Done()
		return res, err, true
	}
	select {
	case r := <-c.done:
		return r.res, r.err, true
	case <-ctx.Done():
		select {
		case r := <-c.done: // answered meanwhile: that result is the truth
			return r.res, r.err, true
		default:
		}
		return nil, sendEnded(o.topic, ctx.Err()), true
	}
}

// eligible returns the cached route of o's topic when msg (encoded as
// o) may join a batch: the message is batchable and the route is cached (a send must
// not block on the NameServers here); nil otherwise.
func (b *batcher) eligible(msg *Message, o *outgoing) *route {
	if !batchable(msg, o) {
		return nil
	}
	if r := b.p.c.cachedRoute(o.topic); r != nil && len(r.pub) > 0 {
		return r
	}
	return nil
}

// join chooses c's queue (r: its topic's route). When nothing of the
// batcher is in flight to that queue's broker and no batch of the queue
// is open, join counts c in flight there and returns the queue with
// alone set: the
// caller sends c itself (sendLone), then calls sent; no batch is made
// and c is not copied to the heap, so a lone message costs no more than
// without batching. Otherwise c (a copy on the heap, returned as pc; a
// Send's with its done channel) joins the queue's open batch, which is
// sent by its linger, by the end of a request to its broker (once its
// queue has none in flight), or by a worker (it is full).
func (b *batcher) join(c pendingSend, r *route) (q Queue, alone bool, pc *pendingSend) {
	msg, o := c.msg, c.o
	keyed := b.keyed(o)

	b.mu.Lock()
	defer b.mu.Unlock()
	if keyed {
		q = b.p.sel.Select(msg, r.pub)
	} else if s, ok := b.sticky[o.topic]; ok && b.open[s] != nil {
		q = s
	} else {
		q = b.p.pick(o, r, "")
		b.sticky[o.topic] = q
	}
	l := b.open[q]
	if l == nil && (b.inflight[q.BrokerName] == 0 || b.lonely(o.topic)) {
		// nothing in flight to q's broker, or its topic's batches stay
		// single: waiting would only add latency
		b.busy[q]++
		b.inflight[q.BrokerName]++
		if s, ok := b.sticky[o.topic]; ok && s == q {
			delete(b.sticky, o.topic)
		}
		return q, true, nil
	}
	// encoded only if it is batched after all: most messages to an idle
	// queue go alone, and their own send encodes them
	size := protocol.BatchItemLen(len(o.body), propsLen(o.props, o.msgID)+protocol.MaxStampPropertyLen)
	if l != nil && l.size+size > b.maxBytes {
		b.closeLocked(l)
		l = nil
	}
	if l == nil {
		l = &lot{q: q}
		b.open[q] = l
		if !keyed {
			b.sticky[o.topic] = q
		}
	}
	pc = new(pendingSend)
	*pc = c
	if pc.sync {
		pc.done = make(chan sendOutcome, 1)
	}
	l.keyed = l.keyed || keyed
	l.calls = append(l.calls, pc)
	l.size += size
	switch {
	case l.size >= b.maxBytes || b.inflight[q.BrokerName] == 0:
		b.closeLocked(l)
	case l.timer == nil:
		l.timer = time.AfterFunc(b.linger, func() { b.expire(l) })
	}
	return q, false, pc
}

// lonely reports whether topic's messages go alone although its broker
// is busy: its batches leave with about one message. Every loneProbe-th
// message is let through to a batch. b.mu is held.
func (b *batcher) lonely(topic string) bool {
	sh := b.shapes[topic]
	if sh == nil || sh.batches < loneAfter || sh.avg >= loneAverage {
		return false
	}
	if sh.alone++; sh.alone >= loneProbe {
		sh.alone = 0
		return false
	}
	return true
}

// settleLocked records that a batch of topic left with n messages.
// b.mu is held.
func (b *batcher) settleLocked(topic string, n int) {
	sh := b.shapes[topic]
	if sh == nil {
		if len(b.shapes) >= loneTopics {
			clear(b.shapes) // many topics, each rarely: start counting again
		}
		sh = &batchShape{avg: 16 * n}
		b.shapes[topic] = sh
	}
	sh.avg += 2*n - sh.avg/8 // avg += (16n - avg) / 8
	sh.batches = min(sh.batches+1, loneAfter)
}

// keyed reports whether o must go to the queue its key (or the
// producer's selector) chooses, on retries too.
func (b *batcher) keyed(o *outgoing) bool { return o.sharded || b.p.s.selector != nil }

// sendLone sends o, which join let go alone, to q (first, or only if
// keyed); a ctx that already ended sends nothing, as for a message that
// gave up in a batch, and fails with ErrSendFailed wrapping ctx's error,
// as a plain send does.
func (b *batcher) sendLone(ctx context.Context, o *outgoing, q Queue) (*SendResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, sendEnded(o.topic, err)
	}
	if b.keyed(o) {
		o.queue = &q
	} else {
		o.first = &q
	}
	return b.p.send(ctx, o, false)
}

// expire sends l when its linger has passed (unless it was sent already).
func (b *batcher) expire(l *lot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open[l.q] == l {
		b.closeLocked(l)
	}
}

// flush sends every open batch now (Shutdown).
func (b *batcher) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.open {
		b.closeLocked(l)
	}
}

// closeLocked removes l from the open batches and sends it in the
// background. b.mu is held.
func (b *batcher) closeLocked(l *lot) {
	b.detachLocked(l)
	workers.Shared().Go(func() { b.send(l) })
}

// detachLocked removes l from the open batches and counts it in flight;
// the caller sends it (b.send). b.mu is held.
func (b *batcher) detachLocked(l *lot) {
	delete(b.open, l.q)
	if s, ok := b.sticky[l.q.Topic]; ok && s == l.q {
		delete(b.sticky, l.q.Topic)
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	b.settleLocked(l.q.Topic, len(l.calls))
	b.busy[l.q]++
	b.inflight[l.q.BrokerName]++
}

// sent records that a request to q ended. Each open batch of q's broker
// whose queue has no request left in flight goes at once: it gathered
// what arrived while the broker was busy, and waiting for the rest of
// its linger would gain nothing. A request's end is when the broker has
// stored (and, SYNC_FLUSH, flushed) what it carried: the batch sent now
// joins its next group commit, with the other queues' batches.
func (b *batcher) sent(q Queue) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inflight[q.BrokerName]--; b.inflight[q.BrokerName] <= 0 {
		delete(b.inflight, q.BrokerName)
	}
	if b.busy[q]--; b.busy[q] <= 0 {
		delete(b.busy, q)
	}
	for oq, l := range b.open {
		if oq.BrokerName == q.BrokerName && b.busy[oq] == 0 {
			b.closeLocked(l)
		}
	}
}

// send sends l as one request and answers each of its callers.
func (b *batcher) send(l *lot) {
	p := b.p
	defer b.sent(l.q)
	calls := l.calls[:0]
	for _, c := range l.calls {
		if err := c.ctx.Err(); err != nil { // gave up while waiting: not sent
			b.answer(c, nil, sendEnded(c.o.topic, err))
			continue
		}
		calls = append(calls, c)
	}
	switch len(calls) {
	case 0:
		return
	case 1: // alone after all: a plain send is cheaper and answers the same
		b.sendAlone(calls, l)
		return
	}
	ctx, cancel := batchContext(calls)
	defer cancel()
	o := batchOf(calls, l)
	res, err := p.send(ctx, o, false)
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Code == protocol.MessageIllegal {
		// the broker refused the batch for one message (a limit of its
		// own below the producer's): the others must not fail with it
		b.sendAlone(calls, l)
		return
	}
	if err != nil {
		for _, c := range calls {
			b.answer(c, nil, err)
		}
		return
	}
	// the answer's offset ids, one per message, comma-separated: cut
	// in turn (substrings, no slice of them)
	ids := res.OffsetMsgID
	each := strings.Count(ids, ",")+1 == len(calls)
	for i, c := range calls {
		r := &SendResult{Status: res.Status, MsgID: c.o.msgID, Queue: res.Queue,
			QueueOffset: res.QueueOffset + int64(i), TransactionID: res.TransactionID}
		if each {
			r.OffsetMsgID, ids, _ = strings.Cut(ids, ",")
		}
		b.answer(c, r, nil)
	}
}

// sendAlone sends each of calls as a message of its own, in order, to
// l's queue first.
func (b *batcher) sendAlone(calls []*pendingSend, l *lot) {
	for _, c := range calls {
		q := l.q
		if l.keyed {
			c.o.queue = &q
		} else {
			c.o.first = &q
		}
		res, err := b.p.send(c.ctx, c.o, false)
		b.answer(c, res, err)
	}
}

// answer ends one SendAsync, as SendAsync's own goroutine does, or hands
// a Send its result (Send calls the interceptors itself).
func (b *batcher) answer(c *pendingSend, res *SendResult, err error) {
	if c.done != nil {
		c.done <- sendOutcome{res, err}
		b.p.async.Done()
		return
	}
	p := b.p
	<-p.asyncSem
	p.after(c.ctx, res, err, c.msg)
	if c.cb != nil {
		c.cb(res, err)
	}
	p.async.Done()
}

// batchOf encodes calls as one batch to l's queue. Its msgID is left
// empty: each caller's result carries the caller's own (b.send), and the
// batch's joined ids would be built only to be dropped.
func batchOf(calls []*pendingSend, l *lot) *outgoing {
	items := make([]batchItem, len(calls))
	for i, c := range calls {
		items[i] = batchItem{flag: c.o.flag, body: c.o.body, props: encodeProps(c.o.props, c.o.msgID, nil)}
	}
	q := l.q
	o := &outgoing{topic: q.Topic, props: map[string]string{}, batch: true, items: items,
		sharded: l.keyed, msg: calls[0].msg}
	if l.keyed {
		o.queue = &q
	} else {
		o.first = &q
	}
	return o
}

// batchContext bounds a batch's send: no caller's cancellation ends it
// (the others still want their messages sent), only the latest of their
// deadlines, when every caller has one. It keeps the first caller's
// values.
func batchContext(calls []*pendingSend) (context.Context, context.CancelFunc) {
	var last time.Time
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.WithoutCancel(calls[0].ctx))
		}
		if d.After(last) {
			last = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(calls[0].ctx), last)
}
