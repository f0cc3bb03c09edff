package mqclient

import (
	"context"
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
	// gen counts the times the queue's lock was regained after it had
	// been lost (ordered consumers): pulls, lines and handler tasks of
	// an older generation are stale and are discarded, not delivered.
	gen uint64
	// resyncing is set from a regained lock until the queue was reset to
	// the committed offset (resync): nothing is pulled, handled or
	// committed meanwhile.
	resyncing bool

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

// lockLease is how long a granted lock is taken as held without renewal:
// a lock not renewed for 30 s may have expired on the broker (60 s), so
// the queue stops starting handlers well before another consumer can get
// it.
const lockLease = 30 * time.Second

func (pq *processQueue) setLocked(ok bool) {
	pq.mu.Lock()
	pq.locked = ok
	if ok {
		pq.lockUntil = time.Now().Add(lockLease)
	}
	pq.mu.Unlock()
}

// relock records a lock the broker granted again. If the queue's lock had
// been lost (refused, its connection closed) or had lapsed (not renewed
// within lockLease) since it was last held, another member may have owned
// the queue meanwhile, consumed past this member's in-memory position and
// committed: everything pulled is stale. The queue then starts a new
// generation: the messages waiting in its key lines are discarded and it
// stays resyncing (nothing pulled, started or committed) until resume
// resets it to the committed offset. regained reports that, with the new
// generation.
func (pq *processQueue) relock() (gen uint64, regained bool) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	now := time.Now()
	regained = !pq.locked || !now.Before(pq.lockUntil)
	pq.locked, pq.lockUntil = true, now.Add(lockLease)
	if regained {
		pq.gen++
		pq.resyncing = true
		for k, line := range pq.keys {
			for _, e := range line {
				pq.forget(e.m)
			}
			delete(pq.keys, k)
		}
	}
	return pq.gen, regained
}

// forget removes m from pending; pq.mu is held.
func (pq *processQueue) forget(m *MessageExt) {
	if _, ok := pq.pending[m.QueueOffset]; ok {
		delete(pq.pending, m.QueueOffset)
		pq.bytes -= len(m.Body)
	}
}

// resume ends the resync of generation gen (relock): the handlers of the
// older generations have returned, so nothing in memory is still needed;
// pulling restarts at off, the offset committed on the broker, as it
// would for a new owner. It reports false if gen is no longer current
// (the lock was lost and regained again: that resync takes over).
func (pq *processQueue) resume(gen uint64, off int64) bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if pq.gen != gen || !pq.resyncing {
		return false
	}
	pq.pending, pq.bytes = map[int64]*MessageExt{}, 0
	pq.keys, pq.busy = map[string][]lineEntry{}, map[string]bool{}
	pq.base, pq.nextPull = off, off
	pq.lastSaved, pq.lastSavedAt = off, time.Now()
	pq.resyncing = false
	return true
}

// lockValid reports whether the broker lock is held and fresh (lockLease)
// and the queue is not resyncing.
func (pq *processQueue) lockValid() bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.lockValidLocked()
}

func (pq *processQueue) lockValidLocked() bool {
	return pq.locked && time.Now().Before(pq.lockUntil) && !pq.resyncing
}

// runnable reports whether a handler task of generation gen may start a
// message: the lock is valid and gen is current.
func (pq *processQueue) runnable(gen uint64) bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.gen == gen && pq.lockValidLocked()
}

// stale reports whether generation gen was superseded by a regained lock.
func (pq *processQueue) stale(gen uint64) bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.gen != gen
}

// finish removes handled messages.
func (pq *processQueue) finish(msgs ...*MessageExt) {
	pq.mu.Lock()
	for _, m := range msgs {
		pq.forget(m)
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
	off, bid, gen, resyncing := pq.nextPull, pq.brokerID, pq.gen, pq.resyncing
	pq.mu.Unlock()
	if resyncing {
		return nil // pullLoop waits for the lock to be valid again
	}
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
	if pq.isDropped() || pq.gen != gen {
		// Dropped, or pulled before the lock was lost and regained: the
		// queue restarts from the committed offset instead.
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
		pc.dispatch(pq, gen, msgs)
	}
	return nil
}

// dispatch starts handlers for newly pulled messages (all of pq's queue,
// in queue order). Concurrent consumers start one task per batch: a run of
// consecutive messages for the same subscription, one message long unless
// it has a BatchHandler. Ordered ones append to the messages' key lines
// and start a task for each idle key, unless generation gen, the one
// msgs were pulled in, was superseded meanwhile (relock).
func (pc *PushConsumer) dispatch(pq *processQueue, gen uint64, msgs []*MessageExt) {
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
		msgs, sub, gen := pc.nextOrdered(pq, k)
		if msgs == nil || !pc.consumeOrdered(pq, sub, gen, msgs) {
			return
		}
	}
}

// nextOrdered takes the head of k's line and the messages after it that
// go to the same handler, up to its batch size, and the queue's current
// generation. With none left, or the queue dropped, it marks k idle and
// returns nil.
func (pc *PushConsumer) nextOrdered(pq *processQueue, k string) ([]*MessageExt, *subscription, uint64) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	line := pq.keys[k]
	if len(line) == 0 || pq.isDropped() {
		delete(pq.busy, k)
		return nil, nil, 0
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
	return msgs, sub, pq.gen
}

// consumeOrdered handles one batch of a key in place, retrying it whole
// with backoff until success or, after WithMaxReconsumeTimes attempts,
// the DLQ. It reports false if the queue was dropped first, or its lock
// was lost and regained since the batch was taken from its line (gen is
// stale: the queue restarts from the committed offset, resync); the
// unfinished messages then stay pending.
func (pc *PushConsumer) consumeOrdered(pq *processQueue, sub *subscription, gen uint64, msgs []*MessageExt) bool {
	for attempt := 1; ; attempt++ {
		if !pc.acquireOrdered(pq, gen) {
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

// acquireOrdered waits until generation gen of pq may start a handler
// (runnable) and takes a handler slot; false if the queue was dropped or
// gen superseded first.
func (pc *PushConsumer) acquireOrdered(pq *processQueue, gen uint64) bool {
	for {
		for !pq.runnable(gen) {
			if pq.stale(gen) || !pq.sleep(100*time.Millisecond) {
				return false
			}
		}
		if !pc.acquire(pq) {
			return false
		}
		if pq.runnable(gen) {
			return true
		}
		<-pc.sem // the lock was lost while waiting for the slot
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
