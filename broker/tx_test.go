package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// txListener decides by the message's key: "commit", "rollback",
// "unknown-commit" (unknown, then commit on check-back) and
// "unknown-rollback".
type txListener struct {
	mu     sync.Mutex
	checks map[string]int
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch m.GetKeys() {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnknowState
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checks[m.GetKeys()]++
	l.mu.Unlock()
	switch m.GetKeys() {
	case "unknown-commit":
		return primitive.CommitMessageState
	case "unknown-rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnknowState
}

func fastTx(o *broker.Options) {
	o.TransactionTimeOut = 300
	o.TransactionCheckInterval = 300
	o.TransactionCheckMax = 3
}

// halfList asks the broker for its pending half messages.
func halfList(t *testing.T, addr string) []map[string]any {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp *protocol.Command
	var err error
	for {
		resp, err = cl.Invoke(ctx, addr, protocol.NewRequest(protocol.TideListHalfMessages, nil, nil))
		// A broker just started answers SYSTEM_BUSY until it has
		// recovered its transactions in the background: wait for that.
		if err != nil || resp.Code != protocol.SystemBusy || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || resp.Code != protocol.Success {
		t.Fatalf("list half: %v %v", err, resp)
	}
	var out []map[string]any
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// topicTotal returns the number of messages stored in topic's queues.
func topicTotal(t *testing.T, addr, topic string, queues int) int64 {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	var n int64
	for q := 0; q < queues; q++ {
		h := protocol.QueueRequestHeader{Topic: topic, QueueID: int32(q)}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		off, _ := strconv.ParseInt(resp.Ext("offset"), 10, 64)
		n += off
	}
	return n
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTransactionOfficialClient(t *testing.T) {
	ns := nameservertest.Start(t)
	b := brokertest.Start(t, ns, fastTx)
	const topic = "TxTopic"
	if err := createTopic(b.Addr(), topic, 4); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, topic)

	l := &txListener{checks: map[string]int{}}
	p, err := rocketmq.NewTransactionProducer(l, producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("txpg"), producer.WithInstanceName("tx-test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	for _, k := range []string{"commit", "rollback", "unknown-commit", "unknown-rollback"} {
		res, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(k)).WithKeys([]string{k}))
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if res.Status != primitive.SendOK {
			t.Fatalf("%s: %+v", k, res)
		}
	}
	waitFor(t, "all half messages resolved", 30*time.Second, func() bool { return len(halfList(t, b.Addr())) == 0 })
	waitFor(t, "the committed messages", 10*time.Second, func() bool { return topicTotal(t, b.Addr(), topic, 4) >= 2 })
	if got := topicTotal(t, b.Addr(), topic, 4); got != 2 {
		t.Fatalf("visible messages = %d, want 2 (commit and unknown-commit)", got)
	}

	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName("txcg"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]int{}
	if err := c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[string(m.Body)]++
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	waitFor(t, "committed messages consumed", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got["commit"] == 1 && got["unknown-commit"] == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("consumed %v", got)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.checks["commit"] != 0 || l.checks["rollback"] != 0 || l.checks["unknown-commit"] < 1 || l.checks["unknown-rollback"] < 1 {
		t.Fatalf("checks %v", l.checks)
	}
}

func createTopic(addr, topic string, queues int32) error {
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	h := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.UpdateAndCreateTopic, h.Encode(), nil))
	if err != nil {
		return err
	}
	if resp.Code != protocol.Success {
		return fmt.Errorf("create topic: %d %s", resp.Code, resp.Remark)
	}
	return nil
}
