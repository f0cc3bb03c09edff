package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// commitLater commits "first" only on check-back and "second" at once, so
// "second" is committed before "first".
type commitLater struct{}

func (l *commitLater) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	if string(m.Body) == "second" {
		return primitive.CommitMessageState
	}
	return primitive.UnknowState
}

func (l *commitLater) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	return primitive.CommitMessageState
}

// TestTransactionShardingKeyCommitOrder: transactional messages with a
// sharding key land in the queue chosen when they were prepared, in
// commit order (documented in docs/broker.md).
func TestTransactionShardingKeyCommitOrder(t *testing.T) {
	ns := nameservertest.Start(t)
	b := brokertest.Start(t, ns, fastTx)
	const topic = "TxOrdered"
	if err := createTopic(b.Addr(), topic, 4); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, topic)
	p, err := rocketmq.NewTransactionProducer(&commitLater{}, producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("txorder"), producer.WithInstanceName("txorder"), producer.WithQueueSelector(producer.NewHashQueueSelector()))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	queues := map[int]bool{}
	for _, body := range []string{"first", "second"} {
		res, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage(topic, []byte(body)).WithShardingKey("order-42"))
		if err != nil {
			t.Fatal(err)
		}
		queues[res.MessageQueue.QueueId] = true
	}
	if len(queues) != 1 {
		t.Fatalf("one sharding key went to queues %v", queues)
	}
	var q int32
	for k := range queues {
		q = int32(k)
	}
	waitFor(t, "both committed", 20*time.Second, func() bool { return len(halfList(t, b.Addr())) == 0 && topicTotal(t, b.Addr(), topic, 4) == 2 })

	// read the queue in order with a raw pull
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	h := protocol.PullMessageRequestHeader{ConsumerGroup: "txorder-reader", Topic: topic, QueueID: q, MaxMsgNums: 32,
		SysFlag: protocol.NewPullSysFlag(false, false, true, false), SuspendTimeoutMillis: 1000, Subscription: "*", ExpressionType: "TAG"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, b.Addr(), protocol.NewRequest(protocol.PullMessage, h.Encode(), nil))
	if err != nil || resp.Code != protocol.Success {
		t.Fatalf("pull: %v %+v", err, resp)
	}
	msgs, err := protocol.DecodeMessages(resp.Body)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("pulled %d messages: %v", len(msgs), err)
	}
	if string(msgs[0].Body) != "second" || string(msgs[1].Body) != "first" {
		t.Fatalf("queue order %q, %q: want commit order (second, first)", msgs[0].Body, msgs[1].Body)
	}
	for _, m := range msgs {
		if protocol.TxType(m.SysFlag) != protocol.SysFlagTxCommit || m.Property(protocol.PropTranPreparedQueueOffset) == "" {
			t.Fatalf("committed message flags %+v", m)
		}
	}
}
