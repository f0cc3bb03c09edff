package mqclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	// lastSavedAt is when lastSaved was written (recommitAfter).
	lastSavedAt time.Time
	brokerID    int64                  // suggested broker for the next pull
	keys        map[string][]lineEntry // ordered: per-key messages not yet started
	busy        map[string]bool        // ordered: keys with a running task
	locked      bool
	lockUntil   time.Time

	// commitMu serialises the queue's offset writes (commit loop, drop,
	// Shutdown), so an older offset computed earlier can never be written
	// after a newer one; released (under commitMu) ends them once the
	// final commit before the unlock was made, so a late write from this
	// member cannot move the offset of the queue's next owner back.
	commitMu sync.Mutex
	released bool

	tasks    sync.WaitGroup // handler tasks from dispatch to outcome
	dropped  chan struct{}
	dropOnce sync.Once
	space    chan struct{} // signalled when messages finish (flow control)
}

// lineEntry is a message waiting in its key's line, with the subscription
// whose handler takes it (resolved at dispatch, outside pq.mu, because
// looking it up takes pc.mu, which is ordered before pq.mu).
type lineEntry struct {
	m   *MessageExt
	sub *subscription
}

func newProcessQueue(q Queue, sub *subscription) *processQueue {
	return &processQueue{q: q, sub: sub, pending: map[int64]*MessageExt{}, keys: map[string][]lineEntry{},
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
	// An unchanged offset is written again now and then, as RocketMQ's
	// clients rewrite every offset each persist interval: a broker that
	// was killed before persisting its offset table has an older one, and
	// a queue receiving nothing new would otherwise never be corrected.
	return off, off != pq.lastSaved || time.Since(pq.lastSavedAt) >= recommitAfter
}

// recommitAfter is how often an unchanged offset is written again.
const recommitAfter = 20 * time.Second

func (pq *processQueue) committed(off int64) {
	pq.mu.Lock()
	pq.lastSaved, pq.lastSavedAt = off, time.Now()
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

// finish removes handled messages.
func (pq *processQueue) finish(msgs ...*MessageExt) {
	pq.mu.Lock()
	for _, m := range msgs {
		if _, ok := pq.pending[m.QueueOffset]; ok {
			delete(pq.pending, m.QueueOffset)
			pq.bytes -= len(m.Body)
		}
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
			pc.s.logger.Warn("mqclient: truncated pull body", "queue", pq.q, "offset", off, "decoded", n, "err", err)
			rh.NextBeginOffset = last + 1
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

// dispatch starts handlers for newly pulled messages (all of pq's queue,
// in queue order). Concurrent consumers start one task per batch: a run of
// consecutive messages for the same subscription, one message long unless
// it has a BatchHandler. Ordered ones append to the messages' key lines
// and start a task for each idle key.
func (pc *PushConsumer) dispatch(pq *processQueue, msgs []*MessageExt) {
	if !pc.s.ordered {
		for len(msgs) > 0 {
			sub := pc.target(pq, msgs[0])
			n, i := min(pc.batchSize(sub), len(msgs)), 1
			for i < n && pc.target(pq, msgs[i]) == sub {
				i++
			}
			batch := msgs[:i:i]
			msgs = msgs[i:]
			pq.tasks.Add(1)
			go pc.runConcurrent(pq, sub, batch)
		}
		return
	}
	entries := make([]lineEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = lineEntry{m: m, sub: pc.target(pq, m)}
	}
	pq.mu.Lock()
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
		go pc.runOrdered(pq, k)
	}
}

// target returns the subscription whose handler takes m: pq's own, or for
// the retry topic the one of m's original topic (nil if there is none).
func (pc *PushConsumer) target(pq *processQueue, m *MessageExt) *subscription {
	if pq.sub.handler != nil || pq.sub.batch != nil {
		return pq.sub
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.subs[m.Topic]
}

// batchSize is the most messages one call of sub's handler takes.
func (pc *PushConsumer) batchSize(sub *subscription) int {
	if sub != nil && sub.batch != nil {
		return pc.s.consumeBatchSize
	}
	return 1
}

// consume runs sub's handler on msgs: all of them for a BatchHandler, the
// only one for a Handler. The handler gets its own slice, so that one
// that keeps it cannot see the retry bookkeeping.
func (pc *PushConsumer) consume(sub *subscription, msgs []*MessageExt) error {
	switch {
	case sub != nil && sub.batch != nil:
		return callBatch(pc.handlerCtx, sub.batch, slices.Clone(msgs))
	case sub != nil && sub.handler != nil:
		return call(pc.handlerCtx, sub.handler, msgs[0])
	}
	return fmt.Errorf("mqclient: no handler for topic %s", msgs[0].Topic)
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

// runConcurrent handles one batch of a concurrent consumer (one handler
// slot for the whole batch) until every message is acknowledged or sent
// back, or its queue is dropped (then the rest stay pending and are
// redelivered to the queue's next owner). A failed batch is sent back
// message by message; the ones the broker refused are retried locally,
// together, after a backoff.
func (pc *PushConsumer) runConcurrent(pq *processQueue, sub *subscription, msgs []*MessageExt) {
	defer pq.tasks.Done()
	for attempt := 0; ; attempt++ {
		if !pc.acquire(pq) {
			return
		}
		err := pc.consume(sub, msgs)
		<-pc.sem
		if err == nil {
			pq.finish(msgs...)
			return
		}
		if pc.s.model == Broadcasting {
			for _, m := range msgs {
				pc.s.logger.Warn("mqclient: broadcast message failed, dropped", "msgId", m.MsgID, "err", err)
			}
			pq.finish(msgs...)
			return
		}
		var left []*MessageExt
		for _, m := range msgs {
			if serr := pc.sendBack(pc.handlerCtx, m, 0); serr != nil {
				pc.s.logger.Debug("mqclient: send back failed, retrying locally", "msgId", m.MsgID, "err", serr)
				left = append(left, m)
				continue
			}
			pq.finish(m)
		}
		if len(left) == 0 {
			return
		}
		msgs = left
		if !pq.sleep(pc.backoff(attempt)) {
			return
		}
		for _, m := range msgs {
			m.ReconsumeTimes++
		}
	}
}

// runOrdered works through key k's line, one batch at a time, until the
// line is empty (the key is then idle again) or the queue is dropped.
func (pc *PushConsumer) runOrdered(pq *processQueue, k string) {
	defer pq.tasks.Done()
	for {
		msgs, sub := pc.nextOrdered(pq, k)
		if msgs == nil || !pc.consumeOrdered(pq, sub, msgs) {
			return
		}
	}
}

// nextOrdered takes the head of k's line and the messages after it that
// go to the same handler, up to its batch size. With none left, or the
// queue dropped, it marks k idle and returns nil.
func (pc *PushConsumer) nextOrdered(pq *processQueue, k string) ([]*MessageExt, *subscription) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	line := pq.keys[k]
	if len(line) == 0 || pq.isDropped() {
		delete(pq.busy, k)
		return nil, nil
	}
	sub := line[0].sub
	n, i := min(pc.batchSize(sub), len(line)), 1
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
	return msgs, sub
}

// consumeOrdered handles one batch of a key in place, retrying it whole
// with backoff until success or, after WithMaxReconsumeTimes attempts,
// the DLQ. It reports false if the queue was dropped first; unfinished
// messages then stay pending.
func (pc *PushConsumer) consumeOrdered(pq *processQueue, sub *subscription, msgs []*MessageExt) bool {
	for attempt := 1; ; attempt++ {
		for !pq.lockValid() {
			if !pq.sleep(100 * time.Millisecond) {
				return false
			}
		}
		if !pc.acquire(pq) {
			return false
		}
		err := pc.consume(sub, msgs)
		<-pc.sem
		if err == nil {
			pq.finish(msgs...)
			return true
		}
		if attempt >= pc.s.maxReconsumeTimes {
			// In queue order, and stopping at the first refusal: a later
			// message of the key never leaves before an earlier one.
			sent := 0
			for _, m := range msgs {
				if serr := pc.sendBack(pc.handlerCtx, m, -1); serr != nil {
					pc.s.logger.Warn("mqclient: ordered message: DLQ send failed, retrying", "msgId", m.MsgID, "err", serr)
					break
				}
				pc.s.logger.Warn("mqclient: ordered message sent to DLQ", "msgId", m.MsgID, "key", m.Key(), "err", err)
				pq.finish(m)
				sent++
			}
			if msgs = msgs[sent:]; len(msgs) == 0 {
				return true
			}
		}
		if !pq.sleep(pc.backoff(attempt - 1)) {
			return false
		}
		for _, m := range msgs {
			m.ReconsumeTimes++
		}
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

// locksLost handles the close of the connection to broker address addr
// (ordered consumers): the locks of the queues that broker serves are
// taken as lost -- the broker may have restarted and forgotten them, or
// given them to another member -- so no handler starts on those queues
// (and they are not pulled) until they are locked again. Handlers already
// running finish. Re-locking is tried at once, then with a backoff of up
// to one lock interval, after which lockLoop carries on.
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
	}
	pc.lockMu.Unlock()
	if len(lost) == 0 {
		return
	}
	pc.s.logger.Info("mqclient: connection to broker closed; its queue locks are taken as lost until renewed",
		"broker", addr, "queues", len(lost))
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
// It reports whether every such queue is now locked.
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
	ctx, cancel := pc.c.ctx()
	got, err := pc.lock(ctx, qs)
	cancel()
	if err != nil {
		pc.s.logger.Debug("mqclient: renew locks", "err", err)
	}
	all := err == nil
	for q, pq := range pqs {
		if got[q] {
			pq.setLocked(true)
		} else {
			all = false
			if err == nil {
				pq.setLocked(false)
			}
		}
	}
	return all
}
