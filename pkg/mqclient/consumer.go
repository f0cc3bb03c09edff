package mqclient

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Name prefixes of the per-group system topics.
const (
	RetryTopicPrefix = protocol.RetryTopicPrefix
	DLQTopicPrefix   = protocol.DLQTopicPrefix
)

// PushConsumer receives the messages of its subscriptions and hands them
// to their handlers. It pulls with long polling, one loop per assigned
// queue, and keeps at most WithFlowControl messages per queue in memory.
//
// Clustering (default): the group's members split the queues (rebalanced
// every WithRebalanceInterval and whenever the broker reports a membership
// change); offsets are committed to the broker every WithCommitInterval, on
// queue reassignment and on Shutdown. A failed message is sent back to the
// broker's retry topic and redelivered later, up to WithMaxReconsumeTimes,
// then it goes to %DLQ%group. Broadcasting: every member gets every
// message; offsets live in a local file; failures are logged and dropped.
//
// Delivery is at least once. A message is redelivered (a duplicate) only
// when its handler had not returned before the consumer crashed or lost the
// queue while Shutdown's context expired, when its queue moved while a
// lower offset of it was still unfinished, or when the broker's retry
// redelivers it (see the package doc). Committed offsets never pass a
// message whose handler has not returned successfully (or sent it back),
// and never move back: a queue's commits are serialised and end with the
// final one made before its lock is released.
//
// Subscribe before Start. All methods are safe for concurrent use.
type PushConsumer struct {
	s     settings
	group string
	c     *Client
	state atomic.Int32

	mu     sync.Mutex
	subs   map[string]*subscription // by topic, the retry topic included
	queues map[Queue]*processQueue

	// lockMu serialises lock renewals (lockLoop) with the unlock of a
	// dropped queue (finishDrop): a renewal sent before the drop but
	// answered after the unlock would otherwise take the queue again and
	// keep its next owner out until the broker expires the lock.
	lockMu sync.Mutex
	// notes is the lock state of each queue last logged (noteLock).
	notes lockNotes

	offsets offsetStore
	sem     chan struct{} // handler slots

	handlerCtx    context.Context
	cancelHandler context.CancelFunc

	trigger chan struct{}
	stop    chan struct{}
	loops   sync.WaitGroup
	pulls   sync.WaitGroup
}

// subscription is one topic's filter and handler: handler or batch, never
// both; neither for the retry topic, whose messages are routed to their
// original topic's subscription (RETRY_TOPIC).
type subscription struct {
	data    protocol.SubscriptionData
	handler Handler
	batch   BatchHandler
}

// NewPushConsumer returns a consumer of group configured by opts;
// WithNameServers is required unless WithClient shares a Client.
func NewPushConsumer(group string, opts ...Option) (*PushConsumer, error) {
	if !validName(group) || len(group) > 255 || group == "DEFAULT_CONSUMER" {
		return nil, fmt.Errorf("%w: consumer group %q", ErrInvalidOption, group)
	}
	s, c, err := memberSettings(opts)
	if err != nil {
		return nil, err
	}
	pc := &PushConsumer{s: s, group: group, c: c, subs: map[string]*subscription{}, queues: map[Queue]*processQueue{},
		sem: make(chan struct{}, s.concurrency), trigger: make(chan struct{}, 1), stop: make(chan struct{})}
	pc.handlerCtx, pc.cancelHandler = context.WithCancel(context.Background())
	return pc, nil
}

// Subscribe registers h for topic's messages that match expr: "*" or ""
// for all, or tags joined by "||" ("TagA || TagB"). Call it before Start;
// a second call for the same topic replaces the first.
func (pc *PushConsumer) Subscribe(topic, expr string, h Handler) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalidOption)
	}
	for i := len(pc.s.middleware) - 1; i >= 0; i-- {
		h = pc.s.middleware[i](h)
	}
	return pc.subscribe(topic, expr, &subscription{handler: h})
}

// SubscribeBatch is Subscribe for a handler that takes up to
// WithConsumeBatchSize messages per call. A batch holds messages of one
// queue only, in queue order, and never waits for more: it is cut from
// what one pull returned (so it is also bounded by WithPullBatchSize), or
// for ordered consumers from the messages of one key that are waiting.
// Success acknowledges the whole batch; an error redelivers every message
// of it, exactly as a failed Handler redelivers its one message, so h must
// be idempotent per message. WithMiddleware wraps Handlers only, not
// batch handlers. Call it before Start; it replaces an earlier
// subscription of the same topic.
func (pc *PushConsumer) SubscribeBatch(topic, expr string, h BatchHandler) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalidOption)
	}
	return pc.subscribe(topic, expr, &subscription{batch: h})
}

func (pc *PushConsumer) subscribe(topic, expr string, sub *subscription) error {
	if pc.state.Load() != stateNew {
		return ErrStarted
	}
	if err := validTopic(topic); err != nil {
		return err
	}
	sub.data = protocol.NewSubscriptionData(topic, expr)
	sub.data.SubVersion = time.Now().UnixMilli()
	pc.mu.Lock()
	pc.subs[topic] = sub
	pc.mu.Unlock()
	return nil
}

// ClientID returns the id the consumer presents to brokers: its Client's.
func (pc *PushConsumer) ClientID() string { return pc.c.clientID }

// Group returns the consumer group.
func (pc *PushConsumer) Group() string { return pc.group }

func (pc *PushConsumer) retryTopic() string { return RetryTopicPrefix + pc.group }

// consumerData is the consumer's part of its Client's heartbeat.
func (pc *PushConsumer) consumerData() protocol.ConsumerData {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	cd := protocol.ConsumerData{GroupName: pc.group, ConsumeType: protocol.ConsumePassively,
		MessageModel: protocol.MessageModelClustering, ConsumeFromWhere: protocol.ConsumeFromLastOffset}
	if pc.s.model == Broadcasting {
		cd.MessageModel = protocol.MessageModelBroadcasting
	}
	switch pc.s.from {
	case ConsumeFromFirst:
		cd.ConsumeFromWhere = protocol.ConsumeFromFirstOffset
	case ConsumeFromTimestamp:
		cd.ConsumeFromWhere = protocol.ConsumeFromTimestamp
	}
	topics := make([]string, 0, len(pc.subs))
	for t := range pc.subs {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, pc.subs[t].data)
	}
	return cd
}

// Start registers the consumer's group with its Client (ErrDuplicateGroup
// if the Client runs another consumer of the group), fetches the routes of
// the subscribed topics (failing with ErrTopicNotFound if one has none),
// heartbeats the brokers, runs the first rebalance and starts pulling. It
// returns once the first rebalance is done; messages may be delivered
// before that.
func (pc *PushConsumer) Start(ctx context.Context) error {
	pc.mu.Lock()
	n := len(pc.subs)
	pc.mu.Unlock()
	if n == 0 {
		return fmt.Errorf("%w: no subscription", ErrInvalidOption)
	}
	if !pc.state.CompareAndSwap(stateNew, stateRunning) {
		return ErrStarted
	}
	pc.mu.Lock()
	topics := make([]string, 0, len(pc.subs))
	for t := range pc.subs {
		topics = append(topics, t)
	}
	if pc.s.model == Clustering {
		d := protocol.NewSubscriptionData(pc.retryTopic(), protocol.SubAll)
		d.SubVersion = time.Now().UnixMilli()
		pc.subs[pc.retryTopic()] = &subscription{data: d}
	}
	pc.mu.Unlock()
	if err := pc.c.acquire(); err != nil {
		pc.state.Store(stateClosed)
		return err
	}
	// Registered before the first heartbeat, which updateRoute sends to
	// every broker it learns of: the broker answers a new member with a
	// NOTIFY_CONSUMER_IDS_CHANGED at once, which the Client passes on.
	if err := pc.c.reg.addConsumer(pc); err != nil {
		pc.abortStart()
		return err
	}
	for _, t := range topics {
		if _, err := pc.c.updateRoute(ctx, t, false); err != nil {
			pc.abortStart()
			return err
		}
	}
	var err error
	if pc.s.model == Broadcasting {
		pc.offsets, err = newLocalOffsets(pc.s.offsetDir, pc.group, pc.s.instanceName)
	} else {
		pc.offsets = &remoteOffsets{pc: pc}
	}
	if err != nil {
		pc.abortStart()
		return err
	}
	pc.c.sendHeartbeats(ctx)
	pc.rebalance(ctx)

	pc.loops.Add(2)
	go pc.rebalanceLoop()
	go pc.commitLoop()
	if pc.s.ordered {
		pc.loops.Add(1)
		go pc.lockLoop()
	}
	return nil
}

// abortStart undoes a failed Start: the consumer is closed and lets go of
// its Client.
func (pc *PushConsumer) abortStart() {
	pc.state.Store(stateClosed)
	pc.c.reg.removeConsumer(pc)
	pc.c.release()
}

// ctx returns a context cancelled when the consumer shuts down.
func (pc *PushConsumer) ctx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-pc.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (pc *PushConsumer) requestRebalance() {
	select {
	case pc.trigger <- struct{}{}:
	default:
	}
}

func (pc *PushConsumer) rebalanceLoop() {
	defer pc.loops.Done()
	t := time.NewTicker(pc.s.rebalanceInterval)
	defer t.Stop()
	for {
		select {
		case <-pc.stop:
			return
		case <-t.C:
		case <-pc.trigger:
		}
		ctx, cancel := pc.ctx()
		pc.rebalance(ctx)
		cancel()
	}
}

// rebalance recomputes the queues of every subscription.
func (pc *PushConsumer) rebalance(ctx context.Context) {
	pc.mu.Lock()
	topics := make([]string, 0, len(pc.subs))
	for t := range pc.subs {
		topics = append(topics, t)
	}
	pc.mu.Unlock()
	sort.Strings(topics)
	for _, t := range topics {
		if err := pc.rebalanceTopic(ctx, t); err != nil {
			pc.s.logger.Debug("mqclient: rebalance", "group", pc.group, "topic", t, "err", err)
		}
	}
}

func (pc *PushConsumer) rebalanceTopic(ctx context.Context, topic string) error {
	r, err := pc.c.route(ctx, topic, false)
	if err != nil {
		return err
	}
	mine := r.sub
	if pc.s.model == Clustering {
		ids, err := pc.consumerIDs(ctx, r)
		if err != nil {
			return err
		}
		mine = pc.s.allocate.Allocate(slices.Clone(r.sub), ids, pc.c.clientID)
	}
	pc.updateQueues(ctx, topic, mine)
	return nil
}

// consumerIDs asks a broker of the topic for the group's members. When the
// caller is missing (its heartbeat has not arrived yet) it heartbeats and
// asks once more.
func (pc *PushConsumer) consumerIDs(ctx context.Context, r *route) ([]string, error) {
	if len(r.data.BrokerDatas) == 0 {
		return nil, ErrBrokerNotFound
	}
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		bd := r.data.BrokerDatas[rand.IntN(len(r.data.BrokerDatas))]
		addr, err := pc.c.brokerAddr(bd.BrokerName, protocol.MasterID)
		if err != nil {
			return nil, err
		}
		h := protocol.ConsumerGroupHeader{ConsumerGroup: pc.group}
		resp, err := pc.c.invoke(ctx, addr, protocol.NewRequest(protocol.GetConsumerListByGroup, h.Encode(), nil), pc.s.requestTimeout)
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
			if slices.Contains(ids, pc.c.clientID) {
				return ids, nil
			}
			last = fmt.Errorf("mqclient: %s not in the member list of %s", pc.c.clientID, pc.group)
		} else {
			last = fmt.Errorf("mqclient: consumer list of %s: %w", pc.group, resp.Err())
		}
		pc.c.sendHeartbeats(ctx)
	}
	return nil, last
}

// updateQueues makes topic's assigned queues equal mine: it drops the
// others (in the background: a dropped queue finishes its running
// handlers, commits and unlocks) and adds the new ones. A queue still
// being dropped is added by a later rebalance, so the two never overlap.
func (pc *PushConsumer) updateQueues(ctx context.Context, topic string, mine []Queue) {
	want := map[Queue]bool{}
	for _, q := range mine {
		want[q] = true
	}
	var add []Queue
	pc.mu.Lock()
	for q, pq := range pc.queues {
		if q.Topic == topic && !want[q] && !pq.isDropped() {
			pq.drop()
			go pc.finishDrop(pq)
		}
	}
	for _, q := range mine {
		if _, ok := pc.queues[q]; !ok {
			add = append(add, q)
		}
	}
	pc.mu.Unlock()
	retry := false
	for _, q := range add {
		if err := pc.addQueue(ctx, q); err != nil {
			pc.s.logger.Debug("mqclient: add queue", "queue", q, "err", err)
			retry = true
		}
	}
	if retry {
		go func() {
			select {
			case <-time.After(time.Second):
				pc.requestRebalance()
			case <-pc.stop:
			}
		}()
	}
}

// finishDrop waits for a dropped queue's handlers, commits its offset,
// unlocks it (ordered) and forgets it.
func (pc *PushConsumer) finishDrop(pq *processQueue) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	idle := pq.waitIdle(ctx)
	pc.commitFinal(ctx, pq)
	pc.lockMu.Lock()
	if pc.s.ordered && idle {
		pc.unlock(ctx, []Queue{pq.q})
	}
	pc.mu.Lock()
	if pc.queues[pq.q] == pq {
		delete(pc.queues, pq.q)
	}
	pc.mu.Unlock()
	pc.lockMu.Unlock()
	if pc.state.Load() == stateRunning {
		pc.requestRebalance()
	}
}

func (pc *PushConsumer) addQueue(ctx context.Context, q Queue) error {
	pc.mu.Lock()
	sub := pc.subs[q.Topic]
	pc.mu.Unlock()
	if sub == nil {
		return nil
	}
	pq := newProcessQueue(q, sub)
	if pc.s.ordered {
		ok, err := pc.lock(ctx, []Queue{q})
		if err != nil {
			pc.noteLock(q, lockFailed, err)
			return err
		}
		if !ok[q] {
			pc.noteLock(q, lockRefused, nil)
			return fmt.Errorf("mqclient: queue %s is locked by another consumer", q)
		}
		pc.noteLock(q, "", nil)
		pq.setLocked(true)
	}
	off, err := pc.startOffset(ctx, q)
	if err != nil {
		if pc.s.ordered {
			pc.unlock(ctx, []Queue{q})
		}
		return err
	}
	pq.init(off)
	pc.mu.Lock()
	if pc.state.Load() != stateRunning {
		pc.mu.Unlock()
		return ErrClosed
	}
	pc.queues[q] = pq
	pc.pulls.Add(1)
	pc.mu.Unlock()
	go pc.pullLoop(pq)
	return nil
}

// startOffset is the stored offset of q, or the ConsumeFrom position.
func (pc *PushConsumer) startOffset(ctx context.Context, q Queue) (int64, error) {
	off, err := pc.offsets.read(ctx, q)
	if err != nil || off >= 0 {
		return off, err
	}
	if strings.HasPrefix(q.Topic, RetryTopicPrefix) {
		return 0, nil
	}
	switch pc.s.from {
	case ConsumeFromFirst:
		return pc.queueOffset(ctx, q, protocol.GetMinOffset, 0)
	case ConsumeFromTimestamp:
		return pc.queueOffset(ctx, q, protocol.SearchOffsetByTimestamp, pc.s.fromTimestamp.UnixMilli())
	}
	return pc.queueOffset(ctx, q, protocol.GetMaxOffset, 0)
}

func (pc *PushConsumer) queueOffset(ctx context.Context, q Queue, code int16, ts int64) (int64, error) {
	addr, err := pc.c.masterAddr(ctx, q.BrokerName, q.Topic)
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
	resp, err := pc.c.invoke(ctx, addr, protocol.NewRequest(code, ext, nil), pc.s.requestTimeout)
	if err != nil {
		return 0, err
	}
	var oh protocol.OffsetResponseHeader
	if err := oh.Decode(resp.ExtFields); err != nil {
		return 0, fmt.Errorf("mqclient: offset of %s: %w (%w)", q, err, resp.Err())
	}
	return oh.Offset, nil
}

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
	off, changed := pq.commitOffset()
	if !changed {
		return nil
	}
	if err := pc.offsets.write(ctx, pq.q, off); err != nil {
		pc.s.logger.Warn("mqclient: commit offset", "queue", pq.q, "offset", off, "err", err)
		return err
	}
	pq.committed(off)
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

// Shutdown stops pulling, waits for running handlers to return (until ctx
// is done; then their contexts are cancelled and their messages will be
// redelivered), commits the offsets of everything that finished, releases
// ordered queue locks, unregisters the group from the brokers (so the
// other members rebalance at once) and releases its Client, which closes
// the connections unless other members still use them (a private Client
// always does). Messages pulled but not
// yet started are not lost: their offsets are not committed. It returns
// ctx's error if it had to stop waiting. Safe to call more than once.
func (pc *PushConsumer) Shutdown(ctx context.Context) error {
	prev := pc.state.Swap(stateClosed)
	if prev == stateClosed {
		return nil
	}
	if prev == stateNew {
		if pc.c.private {
			pc.c.closeIfIdle()
		}
		return nil
	}
	close(pc.stop)
	pc.loops.Wait()
	pc.mu.Lock()
	pqs := make([]*processQueue, 0, len(pc.queues))
	for _, pq := range pc.queues {
		pq.drop()
		pqs = append(pqs, pq)
	}
	pc.mu.Unlock()
	var err error
	idle := map[*processQueue]bool{}
	for _, pq := range pqs {
		idle[pq] = pq.waitIdle(ctx)
		if !idle[pq] && err == nil {
			err = fmt.Errorf("mqclient: shutdown: handlers still running: %w", ctx.Err())
		}
	}
	pc.cancelHandler()
	cctx, cancel := context.WithTimeout(context.Background(), pc.s.requestTimeout)
	defer cancel()
	if ctx.Err() == nil {
		cctx = ctx
	}
	for _, pq := range pqs {
		pc.commitFinal(cctx, pq)
	}
	pc.offsets.flush()
	if pc.s.ordered {
		// A queue with a handler still running stays locked until the
		// broker expires the lock, so no other member starts its keys
		// while that handler may still run.
		var qs []Queue
		for _, pq := range pqs {
			if idle[pq] {
				qs = append(qs, pq.q)
			}
		}
		pc.unlock(cctx, qs)
	}
	pc.c.reg.removeConsumer(pc)
	pc.c.unregister(cctx, "", pc.group)
	pc.c.release()
	pc.pulls.Wait()
	return err
}

// errDropped stops work on a queue that was reassigned.
var errDropped = errors.New("mqclient: queue dropped")
