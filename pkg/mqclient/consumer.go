package mqclient

import (
	"context"
	"errors"
	"fmt"
	"sort"
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

	// The three parts of the consumer (README.md): which queues it owns,
	// pulling them, and running their handlers.
	rb   *rebalancer
	pull *puller
	d    *dispatcher

	stop  chan struct{}
	loops sync.WaitGroup
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
		stop: make(chan struct{})}
	pc.d = newDispatcher(&pc.s, group, c, pc.subscription)
	pc.pull = &puller{s: &pc.s, group: group, c: c, d: pc.d}
	pc.rb = &rebalancer{pc: pc, s: &pc.s, group: group, c: c, trigger: make(chan struct{}, 1)}
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

// subscription returns the subscription of topic, nil if none.
func (pc *PushConsumer) subscription(topic string) *subscription {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.subs[topic]
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
	pc.rb.rebalance(ctx)

	pc.loops.Add(2)
	go pc.rb.loop()
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
	pc.d.cancel()
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
	pc.pull.wg.Wait()
	return err
}

// errDropped stops work on a queue that was reassigned.
var errDropped = errors.New("mqclient: queue dropped")
