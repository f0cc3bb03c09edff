package broker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func init() { rlog.SetLogLevel("error") }

// waitRoute polls the NameServer until topic has a route (brokers register
// asynchronously after a topic change).
func waitRoute(t *testing.T, ns, topic string) {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		h := protocol.GetRouteInfoRequestHeader{Topic: topic}
		resp, err := cl.Invoke(ctx, ns, protocol.NewRequest(protocol.GetRouteInfoByTopic, h.Encode(), nil))
		cancel()
		if err == nil && resp.Code == protocol.Success {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no route for %s", topic)
}

func newProducer(t *testing.T, ns, group string) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName(group), producer.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })
	return p
}

func TestOfficialClientSendAndConsume(t *testing.T) {
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns)
	const topic = "TopicTest"
	p := newProducer(t, ns, "pg")

	const n = 20
	sent := map[string]string{}
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("hello %d", i)
		msg := primitive.NewMessage(topic, []byte(body))
		msg.WithTag([]string{"TagA", "TagB"}[i%2])
		msg.WithKeys([]string{fmt.Sprintf("key-%d", i)})
		res, err := p.SendSync(context.Background(), msg)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.Status != primitive.SendOK || len(res.OffsetMsgID) != 32 {
			t.Fatalf("send %d: %+v", i, res)
		}
		sent[res.MsgID] = body
	}
	// a batch
	var batch []*primitive.Message
	for i := 0; i < 5; i++ {
		batch = append(batch, primitive.NewMessage(topic, []byte(fmt.Sprintf("batch %d", i))).WithTag("TagA"))
	}
	if res, err := p.SendSync(context.Background(), batch...); err != nil || res.Status != primitive.SendOK {
		t.Fatalf("batch: %v %+v", err, res)
	}
	waitRoute(t, ns, topic)

	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName("cg"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		got  = map[string]string{}
		tagA int
		done = make(chan struct{})
	)
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA"}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			if m.GetTags() != "TagA" {
				t.Errorf("tag filter let %q through", m.GetTags())
			}
			got[m.MsgId] = string(m.Body)
			tagA++
		}
		if tagA == n/2+5 {
			close(done)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		mu.Lock()
		t.Fatalf("received %d of %d TagA messages", tagA, n/2+5)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, body := range got {
		if want, ok := sent[id]; ok && want != body {
			t.Errorf("message %s: body %q, want %q", id, body, want)
		}
	}
}

func TestOfficialAdminCreateTopic(t *testing.T) {
	ns := nameservertest.Start(t)
	b := brokertest.Start(t, ns)
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{ns})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx := context.Background()
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate("newOne"), admin.WithBrokerAddrCreate(b.Addr())); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, "newOne")
	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tp := range list.TopicList {
		found = found || tp == "newOne"
	}
	if !found {
		t.Fatalf("topic list %v", list.TopicList)
	}
}
