package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Topics and consumer groups of the workload.
const (
	TopicPlain   = "chaos-plain"
	TopicOrdered = "chaos-ordered"
	TopicTx      = "chaos-tx"
	TopicDelay   = "chaos-delay"

	GroupAll      = "chaos-all"      // Tide client, concurrent: plain, delay, tx
	GroupOrdered  = "chaos-ordered"  // Tide client, orderly: ordered
	GroupOfficial = "chaos-official" // rocketmq-client-go v2, concurrent: plain
	// GroupBroadcast is a broadcasting group of two instances; each must
	// get every message, so the history names each instance as a group of
	// its own: chaos-bcast/c-bcast-1 and chaos-bcast/c-bcast-2.
	GroupBroadcast = "chaos-bcast"

	propID = "chaosid" // user property carrying the workload's message id
)

// Groups maps each consumer group to the topics it must receive.
var Groups = map[string][]string{
	GroupAll:                      {TopicPlain, TopicDelay, TopicTx},
	GroupOrdered:                  {TopicOrdered},
	GroupOfficial:                 {TopicPlain},
	GroupBroadcast + "/c-bcast-1": {TopicPlain, TopicTx},
	GroupBroadcast + "/c-bcast-2": {TopicPlain, TopicTx},
}

// Topics lists every topic of the workload.
var Topics = []string{TopicPlain, TopicOrdered, TopicTx, TopicDelay}

// ConsumerInstances are the restartable consumer instances (the
// consumer-restart fault's targets).
var ConsumerInstances = []string{"c-all-1", "c-all-2", "c-ord-1", "c-ord-2"}

// broadcastInstances are the members of GroupBroadcast (started once;
// their offsets live in files under the run's directory).
var broadcastInstances = []string{"c-bcast-1", "c-bcast-2"}

// Workload runs the producers and consumers against a cluster and records
// every operation. Start it, Stop the producers, Drain, Close.
type Workload struct {
	rec     *Recorder
	dir     string // broadcasting consumers' offset files go here
	ns      []string
	master  func() string // the current master's address ("" if unknown)
	admin   *mqclient.Admin
	log     *slog.Logger
	seed    int64
	intents sync.Map // chaos id -> intent (the transaction checker reads it)
	track   *tracker

	tx       *mqclient.Producer
	official *officialClient

	mu        sync.Mutex
	consumers map[string]*mqclient.PushConsumer

	stop chan struct{}
	wg   sync.WaitGroup

	brokerName       string
	watch, watchDone chan struct{}

	// Durable, if set, is the only send status that makes a message
	// required (BrokerConfig's ConfigDurable); set before Start.
	Durable string
	counter atomic.Int64
}

// queuesPerTopic is the number of queues each topic is created with.
const queuesPerTopic = 4

// NewWorkload prepares a workload; master returns the address of the
// current master of broker group brokerName (timer recalls and offset
// readings go there).
func NewWorkload(rec *Recorder, dir string, nameServers []string, brokerName string, master func() string, admin *mqclient.Admin, seed int64, log *slog.Logger) *Workload {
	return &Workload{rec: rec, dir: dir, ns: nameServers, brokerName: brokerName, master: master, admin: admin, seed: seed, log: log,
		track: newTracker(), consumers: map[string]*mqclient.PushConsumer{}, stop: make(chan struct{})}
}

func (w *Workload) clientOpts() []mqclient.Option {
	return []mqclient.Option{mqclient.WithNameServers(w.ns...), mqclient.WithLogger(w.log),
		mqclient.WithRequestTimeout(3 * time.Second)}
}

// Start starts the consumers, then the producers.
func (w *Workload) Start(ctx context.Context) error {
	for _, name := range append(append([]string{}, ConsumerInstances...), broadcastInstances...) {
		if err := w.StartConsumer(ctx, name); err != nil {
			return err
		}
	}
	oc, err := startOfficial(ctx, w)
	if err != nil {
		return err
	}
	w.official = oc
	tx, err := mqclient.NewTransactionProducer(w.checkBack, append(w.clientOpts(),
		mqclient.WithProducerGroup("chaos-producer"), mqclient.WithSendTimeout(6*time.Second), mqclient.WithRetries(2))...)
	if err != nil {
		return err
	}
	if err := tx.Start(ctx); err != nil {
		return err
	}
	w.tx = tx
	for i := 1; i <= 2; i++ {
		rng := rand.New(rand.NewSource(w.seed*31 + int64(i)))
		name := "p-tide-" + strconv.Itoa(i)
		w.loop(func() { w.mixedOp(rng, name) })
	}
	for i := 1; i <= 2; i++ {
		o := &orderedWorker{name: "p-ord-" + strconv.Itoa(i), seq: map[string]int{}}
		for j := 0; j < 4; j++ {
			o.keys = append(o.keys, fmt.Sprintf("k%d%d", i, j))
		}
		w.loop(func() { w.orderedOp(o) })
	}
	w.loop(func() { w.official.send(w) })
	w.watchOffsets()
	return nil
}

// offsetGroups are the clustering groups whose committed offsets are
// watched (broadcasting groups keep theirs in local files).
var offsetGroups = []string{GroupAll, GroupOrdered, GroupOfficial}

// watchOffsets records, every 2 s until the workload closes, each
// clustering group's committed offset of each queue on the master when it
// changed since the last reading (the checker verifies they never move
// backwards except across a master restart).
func (w *Workload) watchOffsets() {
	w.watch = make(chan struct{})
	w.watchDone = make(chan struct{})
	last := map[string]int64{}
	go func() {
		defer close(w.watchDone)
		master := ""
		for {
			select {
			case <-w.watch:
				return
			case <-time.After(2 * time.Second):
			}
			m := w.master()
			if m == "" {
				continue
			}
			if m != master {
				if master != "" {
					w.rec.Record(Event{Process: "offsets", Type: OK, Op: OpMaster, Detail: m})
				}
				master = m
			}
			for _, g := range offsetGroups {
				for _, t := range Groups[g] {
					for q := int32(0); q < queuesPerTopic; q++ {
						w.readOffset(m, g, mqclient.Queue{Topic: t, BrokerName: w.brokerName, QueueID: q}, last)
					}
				}
			}
		}
	}()
}

func (w *Workload) readOffset(master, group string, q mqclient.Queue, last map[string]int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	off, err := w.admin.CommittedOffset(ctx, master, group, q)
	if err != nil || off < 0 {
		return
	}
	k := group + " " + q.Key()
	if v, ok := last[k]; ok && v == off {
		return
	}
	last[k] = off
	w.rec.Record(Event{Process: "offsets", Type: OK, Op: OpOffset, Group: group,
		Queue: fmt.Sprintf("%s/%s/%d", q.Topic, q.BrokerName, q.QueueID), Offset: off})
}

// loop runs op repeatedly with a short pause until Stop.
func (w *Workload) loop(op func()) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(60 * time.Millisecond):
			}
			op()
		}
	}()
}

// StopProducers stops every producer loop and waits for running
// operations to finish.
func (w *Workload) StopProducers() {
	close(w.stop)
	w.wg.Wait()
}

func (w *Workload) nextID(prefix string) string {
	return prefix + "-" + strconv.FormatInt(w.counter.Add(1), 10)
}

func newMessage(topic, id string) *mqclient.Message {
	return &mqclient.Message{Topic: topic, Keys: []string{id}, Body: []byte("chaos " + id),
		Properties: map[string]string{propID: id}}
}

// outcome records the completion of an invoked send.
func (w *Workload) outcome(inv Event, res *mqclient.SendResult, err error) {
	e := Event{Process: inv.Process, Op: inv.Op, Topic: inv.Topic, IDs: inv.IDs, Key: inv.Key, Seq: inv.Seq, Intent: inv.Intent}
	switch {
	case err == nil && res != nil:
		e.Type, e.Status, e.MsgID = OK, res.Status.String(), res.MsgID
	case errors.Is(err, mqclient.ErrInvalidMessage):
		e.Type, e.Error = Fail, err.Error()
	default:
		e.Type = Info
		if err != nil {
			e.Error = err.Error()
		}
	}
	w.rec.Record(e)
	if e.Type == OK {
		req := (inv.Op != OpTx || inv.Intent == "commit" || inv.Intent == "unknown-commit") && w.durableStatus(e.Status)
		for _, id := range inv.IDs {
			w.track.acked(inv.Topic, id, req)
		}
	}
}

func (w *Workload) mixedOp(rng *rand.Rand, proc string) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	switch n := rng.Intn(100); {
	case n < 20:
		id := w.nextID("s")
		inv := w.rec.Record(Event{Process: proc, Type: Invoke, Op: OpSend, Topic: TopicPlain, IDs: []string{id}})
		res, err := w.tx.Send(ctx, newMessage(TopicPlain, id))
		w.outcome(inv, res, err)
	case n < 30:
		w.asyncOp(ctx, proc)
	case n < 40:
		var msgs []*mqclient.Message
		var ids []string
		for i := 0; i < 2+rng.Intn(4); i++ {
			id := w.nextID("b")
			ids = append(ids, id)
			msgs = append(msgs, newMessage(TopicPlain, id))
		}
		inv := w.rec.Record(Event{Process: proc, Type: Invoke, Op: OpBatch, Topic: TopicPlain, IDs: ids})
		res, err := w.tx.SendBatch(ctx, msgs)
		w.outcome(inv, res, err)
	case n < 50:
		id := w.nextID("d")
		m := newMessage(TopicDelay, id)
		m.DelayLevel = 1 + rng.Intn(3) // 1 s, 5 s, 10 s
		nb := time.Now().Add([]time.Duration{time.Second, 5 * time.Second, 10 * time.Second}[m.DelayLevel-1])
		inv := w.rec.Record(Event{Process: proc, Type: Invoke, Op: OpDelay, Topic: TopicDelay, IDs: []string{id}, NotBefore: &nb,
			Detail: "level " + strconv.Itoa(m.DelayLevel)})
		res, err := w.tx.Send(ctx, m)
		w.outcome(inv, res, err)
	case n < 68:
		w.timerOp(ctx, rng, proc)
	default:
		w.txOp(ctx, rng, proc)
	}
}

// asyncOp sends one message with SendAsync and waits for its callback
// (the process stays sequential; the send takes the async path).
func (w *Workload) asyncOp(ctx context.Context, proc string) {
	id := w.nextID("a")
	inv := w.rec.Record(Event{Process: proc, Type: Invoke, Op: OpAsync, Topic: TopicPlain, IDs: []string{id}})
	done := make(chan struct{})
	err := w.tx.SendAsync(ctx, newMessage(TopicPlain, id), func(res *mqclient.SendResult, err error) {
		w.outcome(inv, res, err)
		close(done)
	})
	if err != nil {
		w.outcome(inv, nil, err)
		return
	}
	<-done
}

func (w *Workload) timerOp(ctx context.Context, rng *rand.Rand, proc string) {
	id := w.nextID("t")
	m := newMessage(TopicDelay, id)
	at := time.Now().Add(time.Duration(1000+rng.Intn(11000)) * time.Millisecond).Truncate(time.Millisecond)
	m.DeliverAt = at
	inv := w.rec.Record(Event{Process: proc, Type: Invoke, Op: OpTimer, Topic: TopicDelay, IDs: []string{id}, NotBefore: &at})
	res, err := w.tx.Send(ctx, m)
	w.outcome(inv, res, err)
	if err != nil || rng.Intn(3) != 0 {
		return
	}
	select {
	case <-time.After(time.Duration(rng.Intn(3000)) * time.Millisecond):
	case <-w.stop:
	}
	rinv := w.rec.Record(Event{Process: proc, Type: Invoke, Op: OpRecall, Topic: TopicDelay, IDs: []string{id}, MsgID: res.MsgID})
	r, rerr := w.admin.RecallTimer(ctx, w.master(), TopicDelay, res.MsgID)
	e := Event{Process: proc, Op: OpRecall, Topic: TopicDelay, IDs: rinv.IDs, MsgID: res.MsgID}
	switch {
	case rerr != nil:
		e.Type, e.Error = Info, rerr.Error()
	case r == mqclient.TimerRecalled:
		e.Type, e.Detail = OK, "recalled"
	case r == mqclient.TimerAlreadyFired:
		e.Type, e.Detail = OK, "already-fired"
	default:
		e.Type, e.Detail = OK, "not-found"
	}
	w.rec.Record(e)
	if e.Type == Info || e.Detail == "recalled" || e.Detail == "not-found" {
		w.track.unrequire(id)
	}
}

var intents = []string{"commit", "commit", "commit", "commit", "rollback", "rollback", "rollback", "unknown-commit", "unknown-commit", "unknown-rollback"}

func (w *Workload) txOp(ctx context.Context, rng *rand.Rand, proc string) {
	id := w.nextID("x")
	intent := intents[rng.Intn(len(intents))]
	w.intents.Store(id, intent)
	inv := w.rec.Record(Event{Process: proc, Type: Invoke, Op: OpTx, Topic: TopicTx, IDs: []string{id}, Intent: intent})
	res, _, err := w.tx.SendInTransaction(ctx, newMessage(TopicTx, id), func(context.Context) error {
		switch intent {
		case "commit":
			return nil
		case "rollback":
			return errors.New("chaos: rollback")
		}
		return mqclient.ErrTransactionUnknown
	})
	// the half message is stored when res is set; local's error is the
	// intended rollback/unknown, an END_TRANSACTION error is left to the
	// check-back, which answers the intent
	if res != nil {
		e := Event{Process: proc, Type: OK, Op: OpTx, Topic: TopicTx, IDs: inv.IDs, Intent: intent, Status: res.Status.String(), MsgID: res.MsgID}
		if err != nil && intent == "commit" {
			e.Detail = err.Error()
		}
		w.rec.Record(e)
		w.track.acked(TopicTx, id, (intent == "commit" || intent == "unknown-commit") && w.durableStatus(e.Status))
		return
	}
	w.outcome(inv, nil, err)
}

// checkBack answers the broker's transaction check-backs with the
// intended outcome.
func (w *Workload) checkBack(_ context.Context, m *mqclient.MessageExt) mqclient.TransactionState {
	v, ok := w.intents.Load(m.Properties[propID])
	if !ok {
		return mqclient.TransactionUnknown
	}
	if s := v.(string); s == "commit" || s == "unknown-commit" {
		return mqclient.TransactionCommit
	}
	return mqclient.TransactionRollback
}

type orderedWorker struct {
	name string
	keys []string
	next int
	seq  map[string]int
}

// orderedOp sends the next message of the worker's next key; a key's
// messages are sent one after the other (sequential sends define the
// order an ordered consumer must keep).
func (w *Workload) orderedOp(o *orderedWorker) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	key := o.keys[o.next%len(o.keys)]
	o.next++
	o.seq[key]++
	seq := o.seq[key]
	id := orderedID(key, seq)
	m := newMessage(TopicOrdered, id)
	m.ShardingKey = key
	inv := w.rec.Record(Event{Process: o.name, Type: Invoke, Op: OpOrdered, Topic: TopicOrdered, IDs: []string{id}, Key: key, Seq: seq})
	res, err := w.tx.Send(ctx, m)
	w.outcome(inv, res, err)
}

// StartConsumer starts the consumer instance name (c-all-N or c-ord-N).
func (w *Workload) StartConsumer(ctx context.Context, name string) error {
	group, topics := GroupAll, Groups[GroupAll]
	opts := append(w.clientOpts(), mqclient.WithInstanceName(name), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithRebalanceInterval(5*time.Second))
	histGroup := ""
	switch name[:5] {
	case "c-ord":
		group, topics = GroupOrdered, Groups[GroupOrdered]
		opts = append(opts, mqclient.WithOrdered())
	case "c-bca":
		group, histGroup = GroupBroadcast, GroupBroadcast+"/"+name
		topics = Groups[histGroup]
		opts = append(opts, mqclient.WithMessageModel(mqclient.Broadcasting),
			mqclient.WithOffsetDir(filepath.Join(w.dir, "offsets", name)))
	}
	if histGroup == "" {
		histGroup = group
	}
	c, err := mqclient.NewPushConsumer(group, opts...)
	if err != nil {
		return err
	}
	for _, t := range topics {
		if err := c.Subscribe(t, "*", w.handler(name, histGroup)); err != nil {
			return err
		}
	}
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("consumer %s: %w", name, err)
	}
	w.mu.Lock()
	w.consumers[name] = c
	w.mu.Unlock()
	return nil
}

// StopConsumer shuts the consumer instance down (gracefully: offsets
// committed, locks released).
func (w *Workload) StopConsumer(ctx context.Context, name string) error {
	w.mu.Lock()
	c := w.consumers[name]
	delete(w.consumers, name)
	w.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Shutdown(ctx)
}

// ConsumerRunning reports whether instance name runs.
func (w *Workload) ConsumerRunning(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.consumers[name] != nil
}

func (w *Workload) handler(name, group string) mqclient.Handler {
	return func(_ context.Context, m *mqclient.MessageExt) error {
		st := m.StoreTimestamp
		id := m.Properties[propID]
		w.rec.Record(Event{Process: name, Type: OK, Op: OpConsume, Group: group, Client: "tide", Topic: m.Topic,
			IDs: []string{id}, Key: m.ShardingKey, MsgID: m.MsgID, Queue: fmt.Sprintf("%s/%d", m.Queue.BrokerName, m.Queue.QueueID),
			Offset: m.QueueOffset, StoreTime: &st, Reconsume: m.ReconsumeTimes})
		w.track.delivered(group, id)
		return nil
	}
}

// durableStatus reports whether a message acknowledged with status must
// be delivered (the drain waits for it): any status, or only Durable.
func (w *Workload) durableStatus(status string) bool {
	return w.Durable == "" || status == w.Durable
}

// Missing returns how many required messages some group has not received
// yet.
func (w *Workload) Missing() int { return w.track.missing() }

// Close shuts every client down.
func (w *Workload) Close(ctx context.Context) {
	if w.watch != nil {
		close(w.watch)
		<-w.watchDone
		w.watch = nil
	}
	w.mu.Lock()
	names := make([]string, 0, len(w.consumers))
	for n := range w.consumers {
		names = append(names, n)
	}
	w.mu.Unlock()
	for _, n := range names {
		_ = w.StopConsumer(ctx, n)
	}
	if w.official != nil {
		w.official.close()
	}
	if w.tx != nil {
		_ = w.tx.Shutdown(ctx)
	}
}

// tracker follows, during the run, which required messages each group
// has received, so the drain knows when to stop. The checker recomputes
// everything from the history.
type tracker struct {
	mu       sync.Mutex
	required map[string]string          // id -> topic
	seen     map[string]map[string]bool // group -> id
}

func newTracker() *tracker {
	t := &tracker{required: map[string]string{}, seen: map[string]map[string]bool{}}
	for g := range Groups {
		t.seen[g] = map[string]bool{}
	}
	return t
}

func (t *tracker) acked(topic, id string, required bool) {
	if !required {
		return
	}
	t.mu.Lock()
	t.required[id] = topic
	t.mu.Unlock()
}

func (t *tracker) unrequire(id string) {
	t.mu.Lock()
	delete(t.required, id)
	t.mu.Unlock()
}

func (t *tracker) delivered(group, id string) {
	t.mu.Lock()
	if s := t.seen[group]; s != nil {
		s[id] = true
	}
	t.mu.Unlock()
}

func (t *tracker) missing() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for g, topics := range Groups {
		for id, topic := range t.required {
			for _, tp := range topics {
				if tp == topic && !t.seen[g][id] {
					n++
				}
			}
		}
	}
	return n
}
