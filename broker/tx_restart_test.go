package broker_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
)

// countingChecker leaves every transaction unknown at first; on check-back
// it commits bodies "c-*" and rolls back "r-*", counting checks per body.
type countingChecker struct {
	mu     sync.Mutex
	checks map[string]int
}

func (l *countingChecker) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.UnknowState
}

func (l *countingChecker) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checks[string(m.Body)]++
	l.mu.Unlock()
	if string(m.Body)[0] == 'c' {
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

func (l *countingChecker) count(body string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checks[body]
}

// TestTransactionBrokerRestartWithPending: 40 half messages are pending
// when the broker restarts; after the restart every one is resolved by
// check-back, the commits are visible once, and resolved ones are never
// checked again.
func TestTransactionBrokerRestartWithPending(t *testing.T) {
	ns := nameservertest.Start(t)
	dir := t.TempDir()
	slowTx := func(o *broker.Options) {
		o.Store.StorePathRootDir = dir
		o.TransactionTimeOut = 300
		o.TransactionCheckInterval = 300
		o.TransactionCheckMax = 15
	}
	b := brokertest.Start(t, ns, slowTx, func(o *broker.Options) { o.TransactionTimeOut = 60000 }) // no checks before the restart
	_, port, _ := net.SplitHostPort(b.Addr())
	const topic = "TxRestart"
	if err := createTopic(b.Addr(), topic, 4); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, topic)
	l := &countingChecker{checks: map[string]int{}}
	p, err := rocketmq.NewTransactionProducer(l, producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("txrestart"), producer.WithInstanceName("txrestart"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	const n = 40
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("r-%d", i)
		if i%2 == 0 {
			body = fmt.Sprintf("c-%d", i)
		}
		if _, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(halfList(t, b.Addr())); got != n {
		t.Fatalf("pending before restart = %d", got)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b = brokertest.Start(t, ns, slowTx, func(o *broker.Options) { o.ListenPort, _ = strconv.Atoi(port) })
	waitFor(t, "all pending resolved after the restart", 60*time.Second, func() bool { return len(halfList(t, b.Addr())) == 0 })
	waitFor(t, "commits visible", 10*time.Second, func() bool { return topicTotal(t, b.Addr(), topic, 4) >= n/2 })
	if got := topicTotal(t, b.Addr(), topic, 4); got != n/2 {
		t.Fatalf("visible = %d, want %d", got, n/2)
	}
	before := map[string]int{}
	for i := 0; i < n; i++ {
		for _, pre := range []string{"c-", "r-"} {
			k := pre + strconv.Itoa(i)
			before[k] = l.count(k)
		}
	}
	// A sentinel needs at least one more check round: once it is resolved,
	// the resolved ones must not have been checked again.
	if _, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte("c-sentinel"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "sentinel resolved", 20*time.Second, func() bool { return l.count("c-sentinel") > 0 && len(halfList(t, b.Addr())) == 0 })
	for k, c := range before {
		if l.count(k) != c {
			t.Fatalf("%s checked again after its resolution (%d -> %d)", k, c, l.count(k))
		}
	}
	waitFor(t, "sentinel visible", 10*time.Second, func() bool { return topicTotal(t, b.Addr(), topic, 4) == n/2+1 })
}

// commitAll is a transaction listener that commits every message at once.
type commitAll struct{}

func (commitAll) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.CommitMessageState
}

func (commitAll) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	return primitive.CommitMessageState
}

// TestTransactionCommittedDelayNotCopiedOnRestart: a transactional message
// with a delivery time (timer) and one with a delay level are committed;
// the broker restarts (same store) several times before they are due.
// The committed copies stay single (one unit in the timer topic, one in
// the delay level's schedule queue), and each is delivered exactly once.
// Before the commit topic was recorded with the decision, every restart
// appended another timer copy (issue #20, bug 1).
func TestTransactionCommittedDelayNotCopiedOnRestart(t *testing.T) {
	ns := nameservertest.Start(t)
	dir := t.TempDir()
	opts := func(o *broker.Options) {
		o.Store.StorePathRootDir = dir
		o.Store.MessageDelayLevel = "300ms 600ms 10s"
	}
	b := brokertest.Start(t, ns, opts)
	const topic = "TxDelayRestart"
	if err := createTopic(b.Addr(), topic, 1); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, topic)
	p, err := rocketmq.NewTransactionProducer(commitAll{}, producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("txdelayrestart"), producer.WithInstanceName(uniq("txdelayrestart")))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	timed := primitive.NewMessage(topic, []byte("timer"))
	timed.WithProperty("TIMER_DELIVER_MS", strconv.FormatInt(time.Now().Add(10*time.Second).UnixMilli(), 10))
	leveled := primitive.NewMessage(topic, []byte("level"))
	leveled.WithDelayTimeLevel(3)
	for _, m := range []*primitive.Message{timed, leveled} {
		res, err := p.SendMessageInTransaction(context.Background(), m)
		if err != nil || res.State != primitive.CommitMessageState {
			t.Fatalf("send %s: %v %+v", m.Body, err, res)
		}
	}
	_ = p.Shutdown()
	waiting := func() (timer, schedule int64) {
		return topicTotal(t, b.Addr(), "rmq_sys_wheel_timer", 1), topicTotal(t, b.Addr(), "SCHEDULE_TOPIC_XXXX", 3)
	}
	waitFor(t, "both committed copies stored", 10*time.Second, func() bool { tm, sc := waiting(); return tm == 1 && sc == 1 })
	for i := 1; i <= 3; i++ {
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		b = brokertest.Start(t, ns, opts)
		if tm, sc := waiting(); tm != 1 || sc != 1 {
			t.Fatalf("after restart %d: %d copies in the timer topic, %d in the schedule topic, want 1 and 1", i, tm, sc)
		}
	}
	waitFor(t, "both delivered", 30*time.Second, func() bool { return topicTotal(t, b.Addr(), topic, 1) >= 2 })
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b = brokertest.Start(t, ns, opts)
	if tm, sc := waiting(); tm != 1 || sc != 1 {
		t.Fatalf("after the last restart: %d copies in the timer topic, %d in the schedule topic, want 1 and 1", tm, sc)
	}
	if n := topicTotal(t, b.Addr(), topic, 1); n != 2 {
		t.Fatalf("delivered %d messages, want 2 (one per committed message)", n)
	}
}
