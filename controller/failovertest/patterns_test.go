//go:build cluster

package failovertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

const (
	orderTopic = "FoOrdered"
	delayTopic = "FoDelayed"
	txTopic    = "FoTx"
	orderKeys  = 6
)

// TestFailoverKeepsOrderDelaysAndTransactions (issue 19): what lives on
// the master follows it through a SIGKILL failover, seen from
// pkg/mqclient's producers and consumers.
//
//   - Per-key order: one sender per sharding key sends 1, 2, 3, ... and
//     sends the next number only after SEND_OK for the last one (retrying
//     it until then), through the kill. An ordered PushConsumer must never
//     see a number more than one above the highest it saw for its key (no
//     gap, no overtaking); seeing a lower one again is the documented
//     redelivery window (the consumer offsets the new master has are the
//     last the slave synced), counted and logged. At the end every
//     acknowledged number was delivered.
//   - Delay levels and timers: messages due after the kill (level 3, 10 s;
//     DeliverAt 8 s) and messages due before it (level 1, 1 s) are each
//     stored in their topic exactly once on the final master, and none was
//     delivered before its due time (the delivered copy's store time is
//     not before the send plus the delay).
//   - Transactions: half messages sent just before the kill whose local
//     transaction answers unknown are checked back only after the kill (the
//     checker answers unknown until then), so the new master's check-back
//     decides them: the committed ones are stored once, the rolled-back
//     ones never.
func TestFailoverKeepsOrderDelaysAndTransactions(t *testing.T) {
	g := newGroup(t, 3)
	g.brokerConf = map[string]string{"transactionTimeOut": "1000", "transactionCheckInterval": "1000"}
	first := g.startBroker("b1")
	g.eventually(30*time.Second, "b1 master", func() bool {
		m, _, err := g.replicaInfo()
		return err == nil && m.MasterAddress == first.addr
	})
	g.startBroker("b2")
	for _, tp := range []string{orderTopic, delayTopic, txTopic} {
		g.createTopic(first.addr, tp, queues)
	}
	g.eventually(60*time.Second, "b2 in the SyncStateSet", func() bool {
		_, set, err := g.replicaInfo()
		return err == nil && len(set) == 2
	})

	ord := newOrderLog()
	consume(t, g.ns, "cg-ordered", orderTopic, true, func(m *mqclient.MessageExt) { ord.deliver(t, m.ShardingKey, string(m.Body)) })
	late := newArrivals()
	consume(t, g.ns, "cg-delayed", delayTopic, false, late.add)

	p := mqProducer(t, g.ns)
	stopOrdered := make(chan struct{})
	var senders sync.WaitGroup
	for k := range orderKeys {
		senders.Add(1)
		go func() {
			defer senders.Done()
			sendOrdered(stopOrdered, p, ord, fmt.Sprintf("key-%d", k))
		}()
	}

	// Delayed and timer messages: some due before the kill, some after.
	type delayed struct {
		body string
		sent time.Time
		due  time.Duration
	}
	var sentDelayed []delayed
	sendDelayed := func(body string, level int, at time.Duration) {
		t.Helper()
		m := &mqclient.Message{Topic: delayTopic, Body: []byte(body), DelayLevel: level}
		due := map[int]time.Duration{1: time.Second, 3: 10 * time.Second}[level]
		if at > 0 {
			m.DelayLevel, m.DeliverAt, due = 0, time.Now().Add(at), at
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := p.Send(ctx, m); err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
		sentDelayed = append(sentDelayed, delayed{body, sent, due})
	}
	for i := range 10 {
		sendDelayed(fmt.Sprintf("early-%d", i), 1, 0)
	}
	g.eventually(30*time.Second, "the 1 s delayed messages delivered before the kill", func() bool { return late.count() >= 10 })
	for i := range 10 {
		sendDelayed(fmt.Sprintf("level3-%d", i), 3, 0)
		sendDelayed(fmt.Sprintf("timer-%d", i), 0, 8*time.Second)
	}

	// Transactions left to the check-back, which waits for the kill.
	var killedFlag atomic.Bool
	var checks atomic.Int64
	tx, err := mqclient.NewTransactionProducer(func(_ context.Context, m *mqclient.MessageExt) mqclient.TransactionState {
		checks.Add(1)
		switch {
		case !killedFlag.Load():
			return mqclient.TransactionUnknown
		case strings.HasPrefix(string(m.Body), "commit-"):
			return mqclient.TransactionCommit
		default:
			return mqclient.TransactionRollback
		}
	}, mqclient.WithNameServers(g.ns), mqclient.WithProducerGroup("pg-tx"), mqclient.WithSendTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Shutdown(context.Background()) })
	for i := range 10 {
		for _, kind := range []string{"commit", "rollback"} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, state, err := tx.SendInTransaction(ctx, &mqclient.Message{Topic: txTopic, Body: []byte(fmt.Sprintf("%s-%d", kind, i))},
				func(context.Context) error { return mqclient.ErrTransactionUnknown })
			cancel()
			if res == nil || state != mqclient.TransactionUnknown || (err != nil && !errors.Is(err, mqclient.ErrTransactionUnknown)) {
				t.Fatalf("half %s-%d: %v %v %v", kind, i, res, state, err)
			}
		}
	}
	g.eventually(30*time.Second, "a check-back before the kill (answered unknown)", func() bool { return checks.Load() > 0 })

	// The kill.
	m, _, err := g.replicaInfo()
	if err != nil {
		t.Fatal(err)
	}
	old := g.byAddr(m.MasterAddress)
	g.eventually(30*time.Second, "every key acknowledged before the kill", func() bool { return ord.ackedKeys() == orderKeys })
	// The consumer offsets follow the master through the slave's metadata
	// sync: wait until the slave has some, so the redelivery after the
	// failover can be bounded by what the slave knew.
	var slaveAddr string
	for _, b := range g.all {
		if b.addr != old.addr {
			slaveAddr = b.addr
		}
	}
	var synced int64
	g.eventually(30*time.Second, "the ordered group's offsets synced to the slave", func() bool {
		synced = committedOffsets(t, g, slaveAddr, "cg-ordered", orderTopic)
		return synced >= 50
	})
	deliveredAtKill := 0
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	killedFlag.Store(true)
	deliveredAtKill = ord.totalDelivered()
	var master string
	g.eventually(60*time.Second, "a new master", func() bool {
		m, _, err := g.replicaInfo()
		master = m.MasterAddress
		return err == nil && master != "" && master != old.addr
	})
	elected := time.Since(killed)
	t.Logf("new master %s %.2fs after the kill", master, elected.Seconds())
	// Ordered consumption resumes on the new master: the consumer's lock,
	// pull and offset requests to the dead master make it refresh the
	// routes at once (before, it waited for the 30 s periodic refresh).
	g.eventually(60*time.Second, "ordered consumption past the kill", func() bool { return ord.totalDelivered() > deliveredAtKill })
	resumed := time.Since(killed)
	t.Logf("ordered consumption resumed %.2fs after the kill", resumed.Seconds())
	if resumed > 15*time.Second {
		t.Errorf("ordered consumption resumed %.1fs after the kill, want within 15 s (a new master was elected %.1fs after it)", resumed.Seconds(), elected.Seconds())
	}
	before := ord.totalAcked()
	g.eventually(60*time.Second, "ordered sends acknowledged by the new master", func() bool { return ord.totalAcked() >= before+orderKeys*5 })
	close(stopOrdered)
	senders.Wait()

	// Every acknowledged number delivered, in order per key.
	g.eventually(90*time.Second, "every acknowledged ordered message delivered", ord.allDelivered)
	if v := ord.violations(); len(v) > 0 {
		t.Fatalf("per-key order broken across the failover:\n%s", strings.Join(v, "\n"))
	}
	// The new master resumed the group at or after the offsets the slave
	// had synced: at most what was delivered beyond them is redelivered.
	// (Counted when the first redelivery came: a handler may still finish
	// a message pulled from the old master just after the kill.)
	consumed := ord.consumedBeforeRedelivery()
	if again := ord.redelivered(); int64(again) > int64(consumed)-synced {
		t.Fatalf("%d ordered messages redelivered after the failover, more than the %d consumed from the old master minus the %d the slave had synced: the consumer offsets did not follow the master",
			again, consumed, synced)
	}
	t.Logf("ordered: %d keys, %d acknowledged, %d consumed from the old master, %d committed offsets on the slave before the kill, %d redelivered",
		orderKeys, ord.totalAcked(), consumed, synced, ord.redelivered())

	// Delayed and timer messages: each delivered, none early, each stored
	// once in its topic on the final master.
	g.eventually(90*time.Second, "every delayed and timer message delivered", func() bool { return late.count() >= len(sentDelayed) })
	for _, d := range sentDelayed {
		st, ok := late.storedAt(d.body)
		if !ok {
			t.Errorf("%s never delivered", d.body)
			continue
		}
		// The store time is the broker's clock, the send time the test's
		// (the same machine); 10 ms of slack for the millisecond rounding.
		if early := d.sent.Add(d.due).Sub(st); early > 10*time.Millisecond {
			t.Errorf("%s delivered %v early (sent %s, due after %v, stored %s)", d.body, early, d.sent.Format(time.StampMilli), d.due, st.Format(time.StampMilli))
		}
	}
	var stored int64
	for q := range int32(queues) {
		stored += maxQueueOffsetOf(t, g, master, delayTopic, q)
	}
	if stored != int64(len(sentDelayed)) {
		t.Errorf("the delayed topic holds %d messages on the final master, want %d (each delayed or timer message once)", stored, len(sentDelayed))
	}

	// Transactions decided by the new master's check-back.
	g.eventually(60*time.Second, "the 10 committed transactional messages visible", func() bool {
		var n int64
		for q := range int32(queues) {
			n += maxQueueOffsetOf(t, g, master, txTopic, q)
		}
		return n >= 10
	})
	time.Sleep(3 * time.Second) // three more check intervals: a second commit of the same half would show
	var n int64
	for q := range int32(queues) {
		n += maxQueueOffsetOf(t, g, master, txTopic, q)
	}
	if n != 10 {
		t.Fatalf("the transactional topic holds %d messages, want the 10 committed once (rolled back ones never)", n)
	}
	t.Logf("transactions: %d check-backs in all; 10 committed, 10 rolled back by the new master", checks.Load())
}

// sendOrdered sends key's numbers 1, 2, ... each until SEND_OK, until stop.
func sendOrdered(stop <-chan struct{}, p *mqclient.Producer, l *orderLog, key string) {
	for n := 1; ; n++ {
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := p.Send(ctx, &mqclient.Message{Topic: orderTopic, ShardingKey: key, Body: []byte(strconv.Itoa(n))})
			cancel()
			if err == nil {
				l.ack(key, n)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// consume starts a PushConsumer of group on topic from its first offset.
func consume(t *testing.T, ns, group, topic string, ordered bool, fn func(*mqclient.MessageExt)) {
	t.Helper()
	opts := []mqclient.Option{mqclient.WithNameServers(ns), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst)}
	if ordered {
		opts = append(opts, mqclient.WithOrdered())
	}
	c, err := mqclient.NewPushConsumer(group, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, "*", func(_ context.Context, m *mqclient.MessageExt) error { fn(m); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(context.Background()) })
}

// orderLog records per key what was acknowledged and what was delivered.
type orderLog struct {
	mu        sync.Mutex
	acked     map[string]int // highest acknowledged number
	seen      map[string]int // highest delivered number
	redeliver int
	// beforeRedeliver is how many were delivered when the first
	// redelivery came: everything consumed from the old master, but for
	// what handlers of other queues finished after it (lateOld).
	beforeRedeliver int
	// atFirst is each key's highest number when the first redelivery came;
	// lateOld adds, for each key redelivered later, what it delivered
	// between that moment and its own first redelivery: until a key is
	// redelivered, all its deliveries are the old master's (a key's
	// messages come in order, the redelivered ones first).
	atFirst    map[string]int
	keyRedeliv map[string]bool
	lateOld    int
	bad        []string
}

func newOrderLog() *orderLog { return &orderLog{acked: map[string]int{}, seen: map[string]int{}} }

func (l *orderLog) ack(key string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[key] = n
}

func (l *orderLog) deliver(t *testing.T, key, body string) {
	n, err := strconv.Atoi(body)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.bad = append(l.bad, fmt.Sprintf("%s: a body that is not a number: %q", key, body))
	case n > l.seen[key]+1:
		l.bad = append(l.bad, fmt.Sprintf("%s: %d delivered after %d (a gap: %d..%d overtaken)", key, n, l.seen[key], l.seen[key]+1, n-1))
	case n <= l.seen[key]:
		if l.redeliver == 0 {
			l.beforeRedeliver = l.sumSeenLocked()
			l.atFirst = maps.Clone(l.seen)
			l.keyRedeliv = map[string]bool{}
		}
		if !l.keyRedeliv[key] {
			l.keyRedeliv[key] = true
			l.lateOld += l.seen[key] - l.atFirst[key]
		}
		l.redeliver++
	default:
		l.seen[key] = n
	}
}

func (l *orderLog) ackedKeys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

func (l *orderLog) totalAcked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, v := range l.acked {
		n += v
	}
	return n
}

func (l *orderLog) totalDelivered() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sumSeenLocked()
}

func (l *orderLog) sumSeenLocked() int {
	n := 0
	for _, v := range l.seen {
		n += v
	}
	return n
}

// consumedBeforeRedelivery returns how many were delivered from the old
// master: those delivered when the first redelivery came, plus those a
// redelivered key delivered after that and before its own first
// redelivery (a handler of another queue finishing what it pulled from the
// old master); the total so far when none came.
func (l *orderLog) consumedBeforeRedelivery() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.redeliver == 0 {
		return l.sumSeenLocked()
	}
	return l.beforeRedeliver + l.lateOld
}

func (l *orderLog) allDelivered() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, v := range l.acked {
		if l.seen[k] < v {
			return false
		}
	}
	return true
}

func (l *orderLog) redelivered() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.redeliver
}

func (l *orderLog) violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.bad...)
}

// arrivals records the store time of the first delivery of each body.
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Time
}

func newArrivals() *arrivals { return &arrivals{at: map[string]time.Time{}} }

func (a *arrivals) add(m *mqclient.MessageExt) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.at[string(m.Body)]; !ok {
		a.at[string(m.Body)] = m.StoreTimestamp
	}
}

func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.at)
}

func (a *arrivals) storedAt(body string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[body]
	return t, ok
}

// maxQueueOffsetOf returns how many messages queue q of topic holds on
// the broker at addr.
func maxQueueOffsetOf(t *testing.T, g *group, addr, topic string, q int32) int64 {
	t.Helper()
	h := protocol.GetMaxOffsetRequestHeader{Topic: topic, QueueID: q}
	resp, err := g.invoke(addr, protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil))
	if err != nil {
		t.Fatalf("max offset of %s/%d on %s: %v", topic, q, addr, err)
	}
	var rh protocol.GetMaxOffsetResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		t.Fatal(err)
	}
	return rh.Offset
}

// committedOffsets returns the sum of group's committed offsets over
// topic's queues on the broker at addr (0 for a queue without one).
func committedOffsets(t *testing.T, g *group, addr, group, topic string) int64 {
	t.Helper()
	var sum int64
	for q := range int32(queues) {
		h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: q}
		resp, err := g.invoke(addr, protocol.NewRequest(protocol.QueryConsumerOffset, h.Encode(), nil))
		if err != nil {
			continue // not found yet
		}
		var oh protocol.OffsetResponseHeader
		if err := oh.Decode(resp.ExtFields); err == nil {
			sum += oh.Offset
		}
	}
	return sum
}
