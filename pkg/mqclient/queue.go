package mqclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// processQueue is the client side of one assigned queue: the messages
// pulled and not yet finished, the offset that is safe to commit, and for
// ordered consumers the per-key lines and the broker lock.
type processQueue struct {
	q   Queue
	sub *subscription

	mu        sync.Mutex
	pending   map[int64]*MessageExt // pulled, not finished
	bytes     int
	base      int64 // commit offset when nothing is pending
	nextPull  int64
	lastSaved int64
	brokerID  int64 // suggested broker for the next pull
	keys      map[string][]*MessageExt
	busy      map[string]bool
	locked    bool
	lockUntil time.Time

	tasks    sync.WaitGroup // handler tasks from dispatch to outcome
	dropped  chan struct{}
	dropOnce sync.Once
	space    chan struct{} // signalled when messages finish (flow control)
}

func newProcessQueue(q Queue, sub *subscription) *processQueue {
	return &processQueue{q: q, sub: sub, pending: map[int64]*MessageExt{}, keys: map[string][]*MessageExt{},
		busy: map[string]bool{}, dropped: make(chan struct{}), space: make(chan struct{}, 1), lastSaved: -1}
}

func (pq *processQueue) init(off int64) {
	pq.mu.Lock()
	pq.base, pq.nextPull = off, off
	pq.mu.Unlock()
}

func (pq *processQueue) drop() {
	pq.mu.Lock()
	pq.dropOnce.Do(func() { close(pq.dropped) })
	pq.mu.Unlock()
}

func (pq *processQueue) isDropped() bool {
	select {
	case <-pq.dropped:
		return true
	default:
		return false
	}
}

// waitIdle waits until no handler task of the queue is outstanding.
func (pq *processQueue) waitIdle(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { pq.tasks.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// commitOffset returns the offset up to which every message is finished,
// and whether it differs from the last one saved.
func (pq *processQueue) commitOffset() (int64, bool) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	off := pq.base
	for o := range pq.pending {
		if o < off {
			off = o
		}
	}
	return off, off != pq.lastSaved
}

func (pq *processQueue) committed(off int64) {
	pq.mu.Lock()
	pq.lastSaved = off
	pq.mu.Unlock()
}

// full reports whether flow control should pause pulling.
func (pq *processQueue) full(maxCount, maxBytes int) bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return len(pq.pending) >= maxCount || pq.bytes >= maxBytes
}

func (pq *processQueue) setLocked(ok bool) {
	pq.mu.Lock()
	pq.locked = ok
	if ok {
		pq.lockUntil = time.Now().Add(30 * time.Second)
	}
	pq.mu.Unlock()
}

// lockValid reports whether the broker lock is held and fresh: a lock not
// renewed for 30 s may have expired on the broker (60 s), so the queue
// stops starting handlers well before another consumer can get it.
func (pq *processQueue) lockValid() bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.locked && time.Now().Before(pq.lockUntil)
}

// finish removes a handled message.
func (pq *processQueue) finish(m *MessageExt) {
	pq.mu.Lock()
	if _, ok := pq.pending[m.QueueOffset]; ok {
		delete(pq.pending, m.QueueOffset)
		pq.bytes -= len(m.Body)
	}
	pq.mu.Unlock()
	select {
	case pq.space <- struct{}{}:
	default:
	}
}

// pullLoop pulls pq until it is dropped.
func (pc *PushConsumer) pullLoop(pq *processQueue) {
	defer pc.pulls.Done()
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
		if pq.full(pc.s.maxCachedCount, pc.s.maxCachedBytes) {
			if !wait(50*time.Millisecond, pq.space) {
				return
			}
			continue
		}
		if pc.s.ordered && !pq.lockValid() {
			if !wait(100*time.Millisecond, nil) {
				return
			}
			continue
		}
		if err := pc.pullOnce(ctx, pq); err != nil {
			if pq.isDropped() {
				return
			}
			pc.s.logger.Debug("mqclient: pull", "queue", pq.q, "err", err)
			if !wait(pc.s.pullBackoff, nil) {
				return
			}
		}
	}
}

func (pc *PushConsumer) pullOnce(ctx context.Context, pq *processQueue) error {
	pq.mu.Lock()
	off, bid := pq.nextPull, pq.brokerID
	pq.mu.Unlock()
	addr, err := pc.c.brokerAddr(pq.q.BrokerName, bid)
	if err != nil {
		if _, rerr := pc.c.updateRoute(ctx, pq.q.Topic, false); rerr != nil {
			return err
		}
		if addr, err = pc.c.brokerAddr(pq.q.BrokerName, bid); err != nil {
			return err
		}
	}
	sd := pq.sub.data
	h := protocol.PullMessageRequestHeader{
		ConsumerGroup:        pc.group,
		Topic:                pq.q.Topic,
		QueueID:              pq.q.QueueID,
		QueueOffset:          off,
		MaxMsgNums:           int32(pc.s.pullBatchSize),
		SysFlag:              protocol.PullSuspend | protocol.PullSubscription,
		SuspendTimeoutMillis: pc.s.pollTimeout.Milliseconds(),
		Subscription:         sd.SubString,
		SubVersion:           0,
		ExpressionType:       sd.ExpressionType,
	}
	resp, err := pc.c.invoke(ctx, addr, protocol.NewRequest(protocol.PullMessage, h.Encode(), nil), pc.s.pollTimeout+10*time.Second)
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
		recs, err := protocol.DecodeMessages(resp.Body)
		if err != nil {
			// Never skip what could not be decoded: deliver the records
			// before the bad one and pull again right after them.
			if len(recs) == 0 {
				return fmt.Errorf("mqclient: pull body of %s at %d: %w", pq.q, off, err)
			}
			pc.s.logger.Warn("mqclient: truncated pull body", "queue", pq.q, "offset", off, "decoded", len(recs), "err", err)
			rh.NextBeginOffset = recs[len(recs)-1].QueueOffset + 1
		}
		for _, r := range recs {
			if r.QueueOffset < off {
				continue
			}
			m := fromStored(r, pq.q.BrokerName)
			if sd.ExpressionType == protocol.ExpressionTypeTag && !sd.MatchesTag(m.Tag) {
				continue
			}
			if rt := r.Property(protocol.PropRetryTopic); rt != "" && strings.HasPrefix(m.Topic, RetryTopicPrefix) {
				m.Topic = rt
			}
			msgs = append(msgs, m)
		}
	}
	pq.mu.Lock()
	if pq.isDropped() {
		pq.mu.Unlock()
		return nil
	}
	pq.brokerID = rh.SuggestWhichBrokerID
	pq.nextPull = rh.NextBeginOffset
	if resp.Code == protocol.PullOffsetMoved {
		pc.s.logger.Warn("mqclient: offset moved", "queue", pq.q, "from", off, "to", rh.NextBeginOffset)
		pq.base = rh.NextBeginOffset
	} else if rh.NextBeginOffset > pq.base {
		pq.base = rh.NextBeginOffset
	}
	for _, m := range msgs {
		pq.pending[m.QueueOffset] = m
		pq.bytes += len(m.Body)
	}
	pq.mu.Unlock()
	if len(msgs) > 0 {
		pc.dispatch(pq, msgs)
	}
	return nil
}

// dispatch starts handlers for newly pulled messages. Concurrent
// consumers start one task per message; ordered ones append to the
// message's key line and start it if idle.
func (pc *PushConsumer) dispatch(pq *processQueue, msgs []*MessageExt) {
	if !pc.s.ordered {
		for _, m := range msgs {
			pq.tasks.Add(1)
			go pc.runConcurrent(pq, m, 0)
		}
		return
	}
	pq.mu.Lock()
	var start []*MessageExt
	for _, m := range msgs {
		k := m.Key()
		if pq.busy[k] {
			pq.keys[k] = append(pq.keys[k], m)
			continue
		}
		pq.busy[k] = true
		start = append(start, m)
	}
	pq.mu.Unlock()
	for _, m := range start {
		pq.tasks.Add(1)
		go pc.runOrdered(pq, m, 0)
	}
}

// handlerFor returns the handler of m's (original) topic.
func (pc *PushConsumer) handlerFor(pq *processQueue, m *MessageExt) Handler {
	if pq.sub.handler != nil {
		return pq.sub.handler
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if s := pc.subs[m.Topic]; s != nil {
		return s.handler
	}
	return nil
}

// acquire takes a handler slot; false if the queue was dropped meanwhile.
func (pc *PushConsumer) acquire(pq *processQueue) bool {
	select {
	case pc.sem <- struct{}{}:
	case <-pq.dropped:
		return false
	}
	if pq.isDropped() {
		<-pc.sem
		return false
	}
	return true
}

func (pc *PushConsumer) backoff(attempt int) time.Duration {
	d := pc.s.retryBackoff
	for i := 0; i < attempt && d < pc.s.maxRetryBackoff; i++ {
		d *= 2
	}
	return min(d, pc.s.maxRetryBackoff)
}

// sleep waits d unless the queue is dropped first.
func (pq *processQueue) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-pq.dropped:
		return false
	}
}

// runConcurrent handles one message of a concurrent consumer until it is
// acknowledged, sent back, or its queue is dropped (then it stays pending
// and is redelivered to the queue's next owner).
func (pc *PushConsumer) runConcurrent(pq *processQueue, m *MessageExt, attempt int) {
	defer pq.tasks.Done()
	for {
		if !pc.acquire(pq) {
			return
		}
		h := pc.handlerFor(pq, m)
		var err error
		if h == nil {
			err = fmt.Errorf("mqclient: no handler for topic %s", m.Topic)
		} else {
			err = call(pc.handlerCtx, h, m)
		}
		<-pc.sem
		if err == nil {
			pq.finish(m)
			return
		}
		if pc.s.model == Broadcasting {
			pc.s.logger.Warn("mqclient: broadcast message failed, dropped", "msgId", m.MsgID, "err", err)
			pq.finish(m)
			return
		}
		if serr := pc.sendBack(pc.handlerCtx, m, 0); serr == nil {
			pq.finish(m)
			return
		} else {
			pc.s.logger.Debug("mqclient: send back failed, retrying locally", "msgId", m.MsgID, "err", serr)
		}
		if !pq.sleep(pc.backoff(attempt)) {
			return
		}
		attempt++
		m.ReconsumeTimes++
	}
}

// runOrdered handles the head message of a key line, retrying it in place
// until success or the DLQ, then starts the key's next message.
func (pc *PushConsumer) runOrdered(pq *processQueue, m *MessageExt, attempt int) {
	defer pq.tasks.Done()
	for {
		for !pq.lockValid() {
			if !pq.sleep(100 * time.Millisecond) {
				return
			}
		}
		if !pc.acquire(pq) {
			return
		}
		h := pc.handlerFor(pq, m)
		var err error
		if h == nil {
			err = fmt.Errorf("mqclient: no handler for topic %s", m.Topic)
		} else {
			err = call(pc.handlerCtx, h, m)
		}
		<-pc.sem
		if err == nil {
			break
		}
		attempt++
		if attempt >= pc.s.maxReconsumeTimes {
			serr := pc.sendBack(pc.handlerCtx, m, -1)
			if serr == nil {
				pc.s.logger.Warn("mqclient: ordered message sent to DLQ", "msgId", m.MsgID, "key", m.Key(), "err", err)
				break
			}
			pc.s.logger.Warn("mqclient: ordered message: DLQ send failed, retrying", "msgId", m.MsgID, "err", serr)
		}
		if !pq.sleep(pc.backoff(attempt - 1)) {
			return
		}
		m.ReconsumeTimes++
	}
	pq.finish(m)
	k := m.Key()
	pq.mu.Lock()
	var next *MessageExt
	if line := pq.keys[k]; len(line) > 0 && !pq.isDropped() {
		next = line[0]
		if len(line) == 1 {
			delete(pq.keys, k)
		} else {
			pq.keys[k] = line[1:]
		}
		pq.tasks.Add(1)
	} else {
		delete(pq.busy, k)
	}
	pq.mu.Unlock()
	if next != nil {
		go pc.runOrdered(pq, next, 0)
	}
}

// sendBack hands a failed message to the broker (CONSUMER_SEND_MSG_BACK):
// to the retry topic, or with delayLevel -1 straight to the DLQ.
func (pc *PushConsumer) sendBack(ctx context.Context, m *MessageExt, delayLevel int32) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pc.s.requestTimeout)
	defer cancel()
	addr, err := pc.c.masterAddr(ctx, m.Queue.BrokerName, m.Queue.Topic)
	if err != nil {
		addr = m.StoreHost
	}
	h := protocol.ConsumerSendMsgBackRequestHeader{
		Offset: m.CommitLogOffset, Group: pc.group, DelayLevel: delayLevel,
		OriginMsgID: m.MsgID, OriginTopic: m.Topic, MaxReconsumeTimes: int32(pc.s.maxReconsumeTimes),
	}
	resp, err := pc.c.invoke(ctx, addr, protocol.NewRequest(protocol.ConsumerSendMsgBack, h.Encode(), nil), pc.s.requestTimeout)
	if err != nil {
		return err
	}
	return resp.Err()
}

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

// lockLoop renews the locks of every assigned queue.
func (pc *PushConsumer) lockLoop() {
	defer pc.loops.Done()
	t := time.NewTicker(pc.s.lockInterval)
	defer t.Stop()
	for {
		select {
		case <-pc.stop:
			return
		case <-t.C:
		}
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
			continue
		}
		ctx, cancel := pc.c.ctx()
		got, err := pc.lock(ctx, qs)
		cancel()
		if err != nil {
			pc.s.logger.Debug("mqclient: renew locks", "err", err)
		}
		for q, pq := range pqs {
			if got[q] {
				pq.setLocked(true)
			} else if err == nil {
				pq.setLocked(false)
			}
		}
	}
}
