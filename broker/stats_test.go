package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestTopicAndConsumeStats(t *testing.T) {
	ns := nameservertest.Start(t)
	b := brokertest.Start(t, ns)
	if err := createTopic(b.Addr(), "StatsTopic", 2); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, "StatsTopic")
	p := newProducer(t, ns, "statspg")
	for i := 0; i < 6; i++ {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage("StatsTopic", []byte("x"))); err != nil {
			t.Fatal(err)
		}
	}
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	call := func(code int16, ext map[string]string) *protocol.Command {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := cl.Invoke(ctx, b.Addr(), protocol.NewRequest(code, ext, nil))
		if err != nil || resp.Code != protocol.Success {
			t.Fatalf("code %d: %v %+v", code, err, resp)
		}
		return resp
	}
	waitFor(t, "6 messages dispatched", 5*time.Second, func() bool { return topicTotal(t, b.Addr(), "StatsTopic", 2) == 6 })
	ts, err := protocol.DecodeTopicStatsTable(call(protocol.GetTopicStatsInfo, map[string]string{"topic": "StatsTopic"}).Body)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for mq, o := range ts.OffsetTable {
		total += o.MaxOffset - o.MinOffset
		if mq.BrokerName != "broker-a" || (o.MaxOffset > 0 && o.LastUpdateTimestamp == 0) {
			t.Fatalf("stats %v %+v", mq, o)
		}
	}
	if total != 6 || len(ts.OffsetTable) != 2 {
		t.Fatalf("topic stats %+v", ts.OffsetTable)
	}
	// the group consumed 2 messages of queue 0
	uh := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "statscg", Topic: "StatsTopic", QueueID: 0, CommitOffset: 2}
	call(protocol.UpdateConsumerOffset, uh.Encode())
	cs, err := protocol.DecodeConsumeStats(call(protocol.GetConsumeStats, map[string]string{"consumerGroup": "statscg", "topic": "StatsTopic"}).Body)
	if err != nil {
		t.Fatal(err)
	}
	if cs.TotalDiff() != 4 {
		t.Fatalf("lag = %d, want 4: %+v", cs.TotalDiff(), cs.OffsetTable)
	}
	// all topics of the group
	cs, err = protocol.DecodeConsumeStats(call(protocol.GetConsumeStats, map[string]string{"consumerGroup": "statscg", "topic": ""}).Body)
	if err != nil || cs.TotalDiff() != 4 {
		t.Fatalf("all topics: %v %+v", err, cs)
	}
	gl := call(protocol.QueryTopicConsumeByWho, map[string]string{"topic": "StatsTopic"})
	if string(gl.Body) != `{"groupList":["statscg"]}` {
		t.Fatalf("consumed by %s", gl.Body)
	}
}
