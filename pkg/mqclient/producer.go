package mqclient

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/remoting/workers"
)

// propTimerDelUniqKey names the timer message a recall message cancels
// (RocketMQ 5 TIMER_DEL_UNIQKEY).
const propTimerDelUniqKey = "TIMER_DEL_UNIQKEY"

// maxAsyncInFlight bounds the asynchronous sends of one Producer that have
// not called back yet; SendAsync blocks above it.
const maxAsyncInFlight = 10000

// SendInterceptor observes or changes every message a Producer sends.
// BeforeSend runs before the message is validated and encoded and may
// modify it; an error aborts the send and is returned to the caller.
// AfterSend runs once per message after the broker's answer (res is nil on
// error and for oneway sends). Both are called concurrently from the
// sending goroutines (for SendAsync, from a goroutine of the producer) and
// must not block for long.
type SendInterceptor interface {
	BeforeSend(ctx context.Context, msg *Message) error
	AfterSend(ctx context.Context, msg *Message, res *SendResult, err error)
}

// Producer sends messages to a topic's brokers, choosing queues with its
// QueueSelector and avoiding brokers that recently failed.
//
// A Producer is safe for concurrent use. Create it with NewProducer, call
// Start, then send; Shutdown ends it. Sends block until the broker answers
// (SendOneway: until the request is written) or their context is done;
// each attempt is also bounded by WithSendTimeout. A send that times out
// may still have been stored. A Tide broker recognises a retry into the
// same queue (idempotent sends, on by default, idempotence.go) and stores
// the message once; with Apache RocketMQ, or a retry that had to move to
// another queue, a message can be stored twice. Consumers must be
// idempotent (RocketMQ is at-least-once).
type Producer struct {
	s     settings
	c     *Client
	state atomic.Int32 // 0 new, 1 running, 2 shut down
	sel   QueueSelector

	async    sync.WaitGroup
	asyncSem chan struct{}

	checker TransactionChecker // set by NewTransactionProducer

	idem *idempotence // nil with WithIdempotence(false)

	batch *batcher // nil without WithAutoBatch (autobatch.go)
}

const (
	stateNew int32 = iota
	stateRunning
	stateClosed
)

// NewProducer returns a producer configured by opts; WithNameServers is
// required unless WithClient shares a Client. It does not connect until
// Start.
func NewProducer(opts ...Option) (*Producer, error) {
	s, c, err := memberSettings(opts)
	if err != nil {
		return nil, err
	}
	p := &Producer{s: s, c: c, sel: s.selector, asyncSem: make(chan struct{}, maxAsyncInFlight)}
	if p.sel == nil {
		p.sel = ByShardingKey()
	}
	if s.idempotence {
		p.idem = newIdempotence()
	}
	if s.linger > 0 {
		p.batch = newBatcher(p, s.linger, s.batchBytes)
	}
	return p, nil
}

// Start registers the producer's group with its Client (whose heartbeats
// carry it from now on) and starts the Client's loops if nothing else
// did. It does not block (except to fetch the WithTopics routes) and
// fails only when called twice, after Shutdown, or when the shared Client
// was closed (ErrClosed).
func (p *Producer) Start(ctx context.Context) error {
	if err := p.c.join(&p.state); err != nil {
		return err
	}
	p.c.reg.addProducer(p)
	if len(p.s.producerTopics) > 0 {
		for _, t := range p.s.producerTopics {
			if _, err := p.c.route(ctx, t, false); err != nil {
				p.c.log.Warn("mqclient: route of a declared topic", "topic", t, "err", err)
			}
		}
		p.c.sendHeartbeats(ctx)
	} else if !p.c.private {
		// A shared Client may know its brokers already, so no first route
		// fetch will heartbeat them: tell them of the group now.
		p.c.heartbeatAsync()
	}
	return nil
}

// Shutdown stops accepting sends, waits until every pending SendAsync has
// called back and every Send waiting in an auto-batch was answered (or
// ctx is done, after which the remaining callbacks get
// ErrClosed-wrapping errors as their connections close), unregisters the
// producer group from the brokers (unless another producer of the group
// still runs on the shared Client) and releases its Client, which closes
// the connections when no other member uses them (a private Client always
// does). Sends already acknowledged are durable per the broker's flush
// policy; Shutdown does not lose them. It is safe to call more than once.
func (p *Producer) Shutdown(ctx context.Context) error {
	prev := p.state.Swap(stateClosed)
	if prev == stateClosed {
		return nil
	}
	if prev == stateNew {
		if p.c.private {
			p.c.closeIfIdle()
		}
		return nil
	}
	if p.batch != nil {
		p.batch.flush() // the open batches go now, not after their linger
	}
	done := make(chan struct{})
	go func() { p.async.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("mqclient: producer shutdown: pending async sends: %w", ctx.Err())
	}
	if p.c.reg.removeProducer(p) {
		p.c.unregister(ctx, p.s.producerGroup, "")
	}
	p.c.release()
	return err
}

// ClientID returns the id the producer presents to brokers: its Client's.
func (p *Producer) ClientID() string { return p.c.clientID }

func (p *Producer) running() error {
	switch p.state.Load() {
	case stateNew:
		return ErrNotStarted
	case stateClosed:
		return ErrClosed
	}
	return nil
}

// outgoing is an encoded message (or batch) ready to send.
type outgoing struct {
	topic string
	body  []byte
	// props: a single message's properties other than UNIQ_KEY (msgID)
	// and TIDE_PSEQ (stamp), nil when it has none (props.go); a batch's
	// header properties
	props     map[string]string
	sysFlag   int32
	flag      int32
	msgID     string
	batch     bool
	sharded   bool // keep the queue on retries
	queue     *Queue
	first     *Queue // the first attempt's queue (an auto-batch's); retries choose again
	deliverAt time.Time
	msg       *Message // for the selector

	// idempotent sends (idempotence.go)
	items []batchItem // a batch's messages, to stamp each
	stamp *stamp      // the last attempt's stamp
	// wire holds the batch body built from items, encoded for the stamp
	// wireFor (nil: plain); a pooled buffer owned by o until releaseWire
	// (wireBody)
	wire    *[]byte
	wireFor *stamp
}

// batchItem is one message of a batch before encoding: props are its
// encoded properties without the stamp.
type batchItem struct {
	flag  int32
	body  []byte
	props string
}

func (p *Producer) encode(msg *Message) (*outgoing, error) {
	if msg == nil {
		return nil, fmt.Errorf("%w: nil message", ErrInvalidMessage)
	}
	if err := validTopic(msg.Topic); err != nil {
		return nil, err
	}
	if len(msg.Body) == 0 {
		return nil, fmt.Errorf("%w: empty body", ErrInvalidMessage)
	}
	if len(msg.Body) > p.s.maxMessageSize {
		return nil, fmt.Errorf("%w: body of %d bytes exceeds %d", ErrInvalidMessage, len(msg.Body), p.s.maxMessageSize)
	}
	if msg.DelayLevel < 0 {
		return nil, fmt.Errorf("%w: delay level %d", ErrInvalidMessage, msg.DelayLevel)
	}
	o := &outgoing{topic: msg.Topic, body: msg.Body, props: msg.properties(), flag: msg.Flag,
		sharded: msg.ShardingKey != "", deliverAt: msg.DeliverAt, msg: msg}
	o.msgID = p.c.ids.Next() // its UNIQ_KEY (props.go)
	delete(o.props, protocol.PropUniqKey)
	delete(o.props, protocol.PropProducerStamp) // copied from a consumed message: only the producer stamps
	if p.s.compressOver > 0 && len(msg.Body) >= p.s.compressOver {
		o.body = deflate(msg.Body)
		o.sysFlag |= protocol.SysFlagCompressed
	}
	if propsLen(o.props, o.msgID) > protocol.MaxPropertiesLength {
		return nil, fmt.Errorf("%w: properties exceed %d bytes", ErrInvalidMessage, protocol.MaxPropertiesLength)
	}
	return o, nil
}

func (p *Producer) before(ctx context.Context, msgs ...*Message) error {
	for _, in := range p.s.interceptors {
		for _, m := range msgs {
			if err := in.BeforeSend(ctx, m); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *Producer) after(ctx context.Context, res *SendResult, err error, msgs ...*Message) {
	for _, in := range p.s.interceptors {
		for _, m := range msgs {
			in.AfterSend(ctx, m, res, err)
		}
	}
}

// Send sends msg and waits for the broker's answer, retrying per
// WithRetries. It returns the result of the attempt that succeeded.
// With WithAutoBatch, concurrent Sends to one queue may go in one batch
// request, like SendAsync's (autobatch.go): a Send to a queue with no
// request of the producer in flight goes at once, alone; otherwise it
// waits in the queue's batch until that request ends (or the linger
// passes, or the batch is full). Each Send still returns its own result
// (MsgID, OffsetMsgID, QueueOffset, and the status of the batch's
// answer, which the broker gives only after the batch is flushed or
// replicated as its flushDiskType and brokerRole require) or the batch's
// error.
func (p *Producer) Send(ctx context.Context, msg *Message) (*SendResult, error) {
	if err := p.running(); err != nil {
		return nil, err
	}
	if err := p.before(ctx, msg); err != nil {
		return nil, err
	}
	o, err := p.encode(msg)
	if err != nil {
		p.after(ctx, nil, err, msg)
		return nil, err
	}
	if p.batch != nil {
		if res, err, ok := p.batch.sendSync(ctx, msg, o); ok {
			p.after(ctx, res, err, msg)
			return res, err
		}
	}
	res, err := p.send(ctx, o, false)
	p.after(ctx, res, err, msg)
	return res, err
}

// SendTo sends msg to the given queue (no selection, no broker switch on
// retry) and waits for the answer.
func (p *Producer) SendTo(ctx context.Context, msg *Message, q Queue) (*SendResult, error) {
	if err := p.running(); err != nil {
		return nil, err
	}
	if err := p.before(ctx, msg); err != nil {
		return nil, err
	}
	o, err := p.encode(msg)
	if err != nil {
		p.after(ctx, nil, err, msg)
		return nil, err
	}
	o.queue = &q
	res, err := p.send(ctx, o, false)
	p.after(ctx, res, err, msg)
	return res, err
}

// SendAsync sends msg in the background and calls cb exactly once with
// the result, from a producer goroutine, unless it returns an error itself
// (invalid message, producer not running, or an interceptor's refusal).
// ctx bounds the whole send, retries included. SendAsync blocks while
// 10000 sends of this producer are pending. For a result channel, send
// from cb into a buffered channel. With WithAutoBatch, msg may wait up to
// the linger to go in one request with other SendAsync messages to its
// queue (autobatch.go); cb still gets msg's own result, or the batch's
// error. A ctx that has ended (before the call, or while SendAsync waits
// for a free slot) is an outcome like any other: SendAsync returns nil,
// sends nothing, and cb gets what Send returns then, ErrSendFailed
// wrapping ctx's error.
func (p *Producer) SendAsync(ctx context.Context, msg *Message, cb func(*SendResult, error)) error {
	if err := p.running(); err != nil {
		return err
	}
	if err := p.before(ctx, msg); err != nil {
		return err
	}
	o, err := p.encode(msg)
	if err != nil {
		p.after(ctx, nil, err, msg)
		return err
	}
	// checked first: a select on a free slot and an ended ctx picks
	// either at random
	if err := ctx.Err(); err != nil {
		p.asyncEnded(ctx, msg, o, cb, err)
		return nil
	}
	select {
	case p.asyncSem <- struct{}{}:
	case <-ctx.Done():
		p.asyncEnded(ctx, msg, o, cb, ctx.Err())
		return nil
	}
	p.async.Add(1)
	if p.batch != nil && p.batch.add(ctx, msg, o, cb) {
		return nil // the batch answers cb
	}
	// A reused goroutine: a fresh one per message regrew its stack
	// every time (see pkg/remoting/workers).
	workers.Shared().Go(func() {
		defer p.async.Done()
		res, err := p.send(ctx, o, false)
		<-p.asyncSem
		p.after(ctx, res, err, msg)
		if cb != nil {
			cb(res, err)
		}
	})
	return nil
}

// asyncEnded answers a SendAsync whose ctx ended (err) before it took a
// slot: nothing is sent; the interceptors and cb get sendEnded's error
// from a producer goroutine, as any other outcome, and Shutdown waits for
// them.
func (p *Producer) asyncEnded(ctx context.Context, msg *Message, o *outgoing, cb func(*SendResult, error), err error) {
	err = sendEnded(o.topic, err)
	p.async.Add(1)
	workers.Shared().Go(func() {
		defer p.async.Done()
		p.after(ctx, nil, err, msg)
		if cb != nil {
			cb(nil, err)
		}
	})
}

// sendEnded is the error of a send whose context ended (err) before it
// was sent: ErrSendFailed wrapping err, as when every attempt failed, for
// Send, SendAsync's callback and a message that gave up in a batch alike.
func sendEnded(topic string, err error) error {
	return fmt.Errorf("%w: topic %s: %w", ErrSendFailed, topic, err)
}

// SendOneway writes msg to a broker without waiting for an answer (the
// request carries the oneway flag, so the broker sends none). It retries
// only when the write itself fails. Delivery is not confirmed: use it only
// where losing a message is acceptable.
func (p *Producer) SendOneway(ctx context.Context, msg *Message) error {
	if err := p.running(); err != nil {
		return err
	}
	if err := p.before(ctx, msg); err != nil {
		return err
	}
	o, err := p.encode(msg)
	if err != nil {
		p.after(ctx, nil, err, msg)
		return err
	}
	_, err = p.send(ctx, o, true)
	p.after(ctx, nil, err, msg)
	return err
}

// SendBatch sends msgs as one batch (SEND_BATCH_MESSAGE) to one queue and
// waits for the answer; the broker stores them with consecutive queue
// offsets. All messages must have the same topic and no delay, and the
// encoded batch must fit WithMaxMessageSize; otherwise ErrInvalidMessage is
// returned and nothing is sent. The queue is chosen from the first
// message (its ShardingKey, if any). The result's MsgID lists the ids.
func (p *Producer) SendBatch(ctx context.Context, msgs []*Message) (*SendResult, error) {
	if err := p.running(); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrInvalidMessage)
	}
	if err := p.before(ctx, msgs...); err != nil {
		return nil, err
	}
	o, err := p.encodeBatch(msgs)
	if err != nil {
		p.after(ctx, nil, err, msgs...)
		return nil, err
	}
	res, err := p.send(ctx, o, false)
	p.after(ctx, res, err, msgs...)
	return res, err
}

func (p *Producer) encodeBatch(msgs []*Message) (*outgoing, error) {
	topic := msgs[0].Topic
	if err := validTopic(topic); err != nil {
		return nil, err
	}
	items := make([]protocol.BatchItem, 0, len(msgs))
	ids := make([]string, 0, len(msgs))
	for i, m := range msgs {
		switch {
		case m == nil:
			return nil, fmt.Errorf("%w: batch message %d is nil", ErrInvalidMessage, i)
		case m.Topic != topic:
			return nil, fmt.Errorf("%w: batch mixes topics %q and %q", ErrInvalidMessage, topic, m.Topic)
		case m.DelayLevel != 0 || !m.DeliverAt.IsZero():
			return nil, fmt.Errorf("%w: batch message %d is delayed", ErrInvalidMessage, i)
		case len(m.Body) == 0:
			return nil, fmt.Errorf("%w: batch message %d has an empty body", ErrInvalidMessage, i)
		}
		id := p.c.ids.Next()
		ids = append(ids, id)
		// encodeProps ignores m's own UNIQ_KEY and TIDE_PSEQ (only the
		// producer stamps)
		items = append(items, protocol.BatchItem{Flag: m.Flag, Body: m.Body, Properties: encodeProps(m.properties(), id, nil)})
	}
	o := &outgoing{topic: topic, props: map[string]string{}, batch: true,
		msgID: strings.Join(ids, ","), sharded: msgs[0].ShardingKey != "", msg: msgs[0]}
	if p.idem != nil {
		// encoded per attempt with the stamps (wireBody): check the size
		// it will have
		o.items = make([]batchItem, len(items))
		size := 0
		for i, it := range items {
			if len(it.Properties)+protocol.MaxStampPropertyLen > protocol.MaxPropertiesLength {
				return nil, fmt.Errorf("%w: batch message %d: properties exceed %d bytes", ErrInvalidMessage, i, protocol.MaxPropertiesLength)
			}
			o.items[i] = batchItem{flag: it.Flag, body: it.Body, props: it.Properties}
			size += protocol.BatchItemLen(len(it.Body), len(it.Properties)+protocol.MaxStampPropertyLen)
		}
		if size > p.s.maxMessageSize {
			return nil, fmt.Errorf("%w: batch of %d bytes exceeds %d", ErrInvalidMessage, size, p.s.maxMessageSize)
		}
		return o, nil
	}
	body, err := protocol.AppendBatch(nil, items)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	if len(body) > p.s.maxMessageSize {
		return nil, fmt.Errorf("%w: batch of %d bytes exceeds %d", ErrInvalidMessage, len(body), p.s.maxMessageSize)
	}
	o.body = body
	return o, nil
}

// Recall cancels a pending timer message (one sent with DeliverAt) by
// sending a recall message naming its id to the same queue with the same
// delivery time (RocketMQ 5 TIMER_DEL_UNIQKEY). It returns once the broker
// stored the recall; a timer that already fired is not affected, so
// handlers must still tolerate the message.
func (p *Producer) Recall(ctx context.Context, res *SendResult) error {
	if err := p.running(); err != nil {
		return err
	}
	if res == nil || res.DeliverAt.IsZero() || res.MsgID == "" {
		return fmt.Errorf("%w: recall needs the SendResult of a DeliverAt message", ErrInvalidMessage)
	}
	q := res.Queue
	o := &outgoing{topic: q.Topic, body: []byte("recall"), queue: &q, msgID: p.c.ids.Next(), props: map[string]string{
		protocol.PropTimerDeliverMS: strconv.FormatInt(res.DeliverAt.UnixMilli(), 10),
		propTimerDelUniqKey:         res.MsgID,
	}}
	_, err := p.send(ctx, o, false)
	return err
}

// pick chooses the queue of one attempt. Messages with a fixed or sharded
// queue keep it; others avoid the last failed broker and isolated brokers
// when any other broker is available.
func (p *Producer) pick(o *outgoing, r *route, lastFailed string) Queue {
	qs := r.pub
	if o.queue != nil {
		return *o.queue
	}
	if o.first != nil && lastFailed == "" {
		return *o.first
	}
	if o.sharded || p.s.selector != nil {
		return p.sel.Select(o.msg, qs)
	}
	n := len(qs)
	start := int(r.next.Add(1) - 1)
	fallback := -1
	for i := 0; i < n; i++ {
		q := qs[(start+i)%n]
		if q.BrokerName == lastFailed {
			continue
		}
		if fallback < 0 {
			fallback = (start + i) % n
		}
		if !p.s.faultIsolation || p.c.faults.available(q.BrokerName) {
			return q
		}
	}
	if fallback >= 0 {
		return qs[fallback]
	}
	return qs[start%n]
}

// retryable reports whether a failed attempt may be retried.
func retryable(err error) bool {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case protocol.SystemError, protocol.SystemBusy, protocol.ServiceNotAvailable,
			protocol.NoPermission, protocol.TopicNotExist:
			return true
		}
		return false
	}
	return errors.Is(err, remoting.ErrClosed) || errors.Is(err, remoting.ErrDial) ||
		errors.Is(err, remoting.ErrTimeout) || errors.Is(err, ErrBrokerNotFound)
}

// staleRoute reports whether a failed send suggests that the topic's
// cached route is out of date: the broker is unreachable or closed the
// connection (it died or restarted; its master may have moved or
// re-registered), or it does not know the topic.
func staleRoute(err error) bool {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		// SERVICE_NOT_AVAILABLE is also a slave's answer to a send: the
		// cached route names a master that was demoted (controller mode:
		// a killed master restarted as a slave under its old address
		// before this producer noticed the failover).
		return pe.Code == protocol.TopicNotExist || pe.Code == protocol.ServiceNotAvailable
	}
	// A timeout counts too: a master that died without closing its
	// connections (a killed container, a cut network) shows as requests
	// timing out, and its successor registers under another address.
	return errors.Is(err, remoting.ErrDial) || errors.Is(err, remoting.ErrClosed) || errors.Is(err, remoting.ErrTimeout)
}

func (p *Producer) send(ctx context.Context, o *outgoing, oneway bool) (*SendResult, error) {
	if err := ctx.Err(); err != nil {
		// nothing to try: no route lookup, no sequence taken (idempotence.go),
		// and no expired deadline mistaken for a broker's timeout
		return nil, sendEnded(o.topic, err)
	}
	defer o.releaseWire() // no attempt uses o's batch body any more
	var lastErr error
	lastBroker := ""
	// an attempt whose outcome is unknown pins the retries to its queue,
	// where the stamp's sequence recognises them (idempotence.go)
	var pinned *Queue
	for attempt := 0; attempt <= p.s.retries; attempt++ {
		if attempt > 0 && ctx.Err() != nil {
			break
		}
		if pinned != nil && !pinnedWait(ctx, attempt) {
			break
		}
		r, err := p.c.route(ctx, o.topic, p.s.autoCreate)
		if err != nil {
			lastErr = err
			if errors.Is(err, ErrTopicNotFound) {
				break
			}
			continue
		}
		if len(r.pub) == 0 {
			// The cached route may predate a master's (re)registration:
			// ask the NameServers now rather than at the next periodic
			// refresh.
			if fresh, ferr := p.c.refreshRoute(ctx, o.topic); ferr == nil {
				r = fresh
			}
			if len(r.pub) == 0 {
				lastErr = fmt.Errorf("%w: %s has no writable queue", ErrTopicNotFound, o.topic)
				break
			}
		}
		q := p.pick(o, r, lastBroker)
		if pinned != nil {
			q = *pinned
		}
		addr, err := p.c.masterAddr(ctx, q.BrokerName, o.topic)
		if err != nil {
			lastErr, lastBroker = err, q.BrokerName
			continue
		}
		if p.s.faultIsolation && !p.c.unreachable.available(addr) {
			addr = p.awaitMaster(ctx, q.BrokerName, o.topic, addr)
		}
		start := time.Now()
		res, err := p.sendOnce(ctx, addr, q, o, oneway)
		if ctx.Err() == nil {
			p.c.faults.record(q.BrokerName, time.Since(start), err != nil)
		}
		if err == nil {
			p.c.unreachable.clear(addr)
			return res, nil
		}
		if errors.Is(err, remoting.ErrTimeout) || errors.Is(err, remoting.ErrDial) {
			p.c.unreachable.isolateFor(addr, p.s.sendTimeout)
		}
		lastErr, lastBroker = err, q.BrokerName
		switch {
		case o.stamp != nil && o.stamp.q == q && outcomeUnknown(err):
			pinned = &q
		case errors.Is(err, remoting.ErrDial) && otherBroker(r.pub, q.BrokerName):
			pinned = nil // the broker is gone: another broker's queue, a new sequence there
		}
		if staleRoute(err) {
			p.c.refreshRoute(ctx, o.topic)
		}
		if !retryable(err) || (oneway && !errors.Is(err, remoting.ErrDial) && !errors.Is(err, remoting.ErrClosed)) {
			break
		}
		p.s.logger.Debug("mqclient: send attempt failed", "topic", o.topic, "broker", q.BrokerName, "attempt", attempt, "err", err)
	}
	return nil, fmt.Errorf("%w: topic %s: %w", ErrSendFailed, o.topic, lastErr)
}

// awaitMaster is called when the master address of brokerName is dead,
// a send to it having just timed out or failed to dial: the master was
// killed, or its host vanished (then every attempt costs a whole send or
// dial timeout), and the controller's new master registers with the
// NameServers under another address within seconds. It looks the route up
// again every routeRetryGap until the NameServers name another master, and
// returns that address; or dead itself once dead's isolation ends (it may
// be back, or only slow: then this cost at most one send timeout, as the
// attempt it replaces would have) or ctx ends. Retries pinned to a queue
// (idempotence.go) wait here for their queue's new master too.
func (p *Producer) awaitMaster(ctx context.Context, brokerName, topic, dead string) string {
	t := time.NewTicker(p.s.routeRetryGap)
	defer t.Stop()
	for {
		p.c.refreshRoute(ctx, topic) // errors keep the cached route
		if a, ok := p.c.cachedMasterAddr(brokerName); ok && a != dead {
			p.s.logger.Debug("mqclient: the NameServers name a new master", "broker", brokerName, "dead", dead, "master", a)
			return a
		}
		if p.c.unreachable.available(dead) {
			return dead
		}
		select {
		case <-ctx.Done():
			return dead
		case <-t.C:
		}
	}
}

func (p *Producer) sendOnce(ctx context.Context, addr string, q Queue, o *outgoing, oneway bool) (*SendResult, error) {
	if _, err := p.stampFor(ctx, addr, q, o); err != nil {
		return nil, err
	}
	props := protocol.EncodeProperties(o.props) // a batch's header: its items carry the stamps
	if !o.batch {
		props = o.wireProps()
	}
	body, err := o.wireBody()
	if err != nil {
		return nil, err
	}
	h := protocol.SendMessageRequestHeader{
		ProducerGroup:         p.s.producerGroup,
		Topic:                 o.topic,
		DefaultTopic:          protocol.DefaultTopicTemplate,
		DefaultTopicQueueNums: protocol.DefaultTopicQueueNums,
		QueueID:               q.QueueID,
		SysFlag:               o.sysFlag,
		BornTimestamp:         time.Now().UnixMilli(),
		Flag:                  o.flag,
		Properties:            props,
		MaxReconsumeTimes:     -1,
		Batch:                 o.batch,
	}
	code := protocol.SendMessageV2
	if o.batch {
		code = protocol.SendBatchMessage
	}
	req := protocol.NewTypedRequest(code, h.V2(), body)
	if oneway {
		cctx, cancel := context.WithTimeout(ctx, p.s.sendTimeout)
		defer cancel()
		return nil, p.c.rc.InvokeOneway(cctx, addr, req)
	}
	resp, err := p.c.invoke(ctx, addr, req, p.s.sendTimeout)
	if err != nil {
		return nil, err
	}
	var st SendStatus
	switch resp.Code {
	case protocol.Success:
		st = SendOK
	case protocol.FlushDiskTimeout:
		st = SendFlushDiskTimeout
	case protocol.FlushSlaveTimeout:
		st = SendFlushSlaveTimeout
	case protocol.SlaveNotAvailable:
		st = SendSlaveNotAvailable
	case protocol.TideProducerFenced:
		return nil, p.fence(fmt.Errorf("mqclient: send to %s: %w", addr, resp.Err()))
	case protocol.TideSequenceOutOfOrder:
		return nil, fmt.Errorf("%w: send to %s: %w", ErrSequenceOutOfOrder, addr, resp.Err())
	default:
		return nil, fmt.Errorf("mqclient: send to %s: %w", addr, resp.Err())
	}
	var rh protocol.SendMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return nil, fmt.Errorf("mqclient: send response from %s: %w", addr, err)
	}
	q.QueueID = rh.QueueID
	return &SendResult{Status: st, MsgID: o.msgID, OffsetMsgID: rh.MsgID, Queue: q,
		QueueOffset: rh.QueueOffset, TransactionID: rh.TransactionID, DeliverAt: o.deliverAt}, nil
}
