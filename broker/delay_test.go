package broker_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func fastLevels(o *broker.Options) {
	o.Store.MessageDelayLevel = "300ms 600ms 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s"
}

// TestDelayAndTimerNeverEarly sends a delay-level message and timer
// messages (RocketMQ 5 properties) with the official client, recalls one
// timer, and checks that the others arrive, never early, and the recalled
// one never does.
func TestDelayAndTimerNeverEarly(t *testing.T) {
	ns := nameservertest.Start(t)
	b := brokertest.Start(t, ns, fastLevels)
	const topic = "DelayTopic"
	if err := createTopic(b.Addr(), topic, 2); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, topic)
	p := newProducer(t, ns, "delaypg")
	ctx := context.Background()

	lvl := primitive.NewMessage(topic, []byte("level-1"))
	lvl.WithDelayTimeLevel(1)
	timed := primitive.NewMessage(topic, []byte("timer-800ms"))
	timed.WithProperty("TIMER_DELAY_MS", "800")
	recalled := primitive.NewMessage(topic, []byte("recalled"))
	recalled.WithProperty("TIMER_DELAY_MS", "1200")
	sentinel := primitive.NewMessage(topic, []byte("sentinel"))
	sentinel.WithProperty("TIMER_DELIVER_MS", strconv.FormatInt(time.Now().Add(1500*time.Millisecond).UnixMilli(), 10))
	var recallHandle string
	for _, m := range []*primitive.Message{lvl, timed, recalled, sentinel} {
		res, err := p.SendSync(ctx, m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %+v", m.Body, err, res)
		}
		if string(m.Body) == "recalled" {
			recallHandle = res.MsgID
		}
	}
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	resp, err := cl.Invoke(rctx, b.Addr(), protocol.NewRequest(protocol.TideRecallTimer, map[string]string{"handle": recallHandle}, nil))
	cancel()
	if err != nil || resp.Code != protocol.Success {
		t.Fatalf("recall: %v %+v", err, resp)
	}
	// a too distant timer is refused
	far := primitive.NewMessage(topic, []byte("far"))
	far.WithProperty("TIMER_DELAY_SEC", strconv.Itoa(10*24*3600))
	if _, err := p.SendSync(ctx, far); err == nil {
		t.Fatal("a timer 10 days ahead was accepted (timerMaxDelaySec is 3 days)")
	}

	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName("delaycg"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]*primitive.MessageExt{}
	if err := c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[string(m.Body)] = m
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	waitFor(t, "delayed and timer messages", 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got["level-1"] != nil && got["timer-800ms"] != nil && got["sentinel"] != nil
	})
	mu.Lock()
	defer mu.Unlock()
	if got["recalled"] != nil {
		t.Fatal("a recalled timer was delivered")
	}
	if m := got["level-1"]; m.StoreTimestamp-m.BornTimestamp < 300 {
		t.Fatalf("level 1 delivered %d ms after it was born, want >= 300", m.StoreTimestamp-m.BornTimestamp)
	}
	for _, k := range []string{"timer-800ms", "sentinel"} {
		m := got[k]
		due, err := strconv.ParseInt(m.GetProperty("TIMER_OUT_MS"), 10, 64)
		if err != nil {
			t.Fatalf("%s: TIMER_OUT_MS %q", k, m.GetProperty("TIMER_OUT_MS"))
		}
		if m.StoreTimestamp < due {
			t.Fatalf("%s delivered %d ms early", k, due-m.StoreTimestamp)
		}
	}
	// the recalled timer (due before the sentinel) never fired: only the
	// three delivered copies are in the topic
	if n := topicTotal(t, b.Addr(), topic, 2); n != 3 {
		t.Fatalf("messages in the topic = %d, want 3", n)
	}
}
