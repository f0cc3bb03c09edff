package mqclient_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

func TestProducerSendModes(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 4)
	p := e.Producer(t)
	ctx := context.Background()
	rec := tidetest.NewRecorder()
	e.Consumer(t, "g-modes", topic, rec.Handle, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))

	want := map[string]bool{}
	for i := 0; i < 5; i++ {
		m := &mqclient.Message{Topic: topic, Body: []byte(fmt.Sprintf("sync-%d", i)), Tag: "TagA",
			Keys: []string{"k1", fmt.Sprintf("sync-%d", i)}, Properties: map[string]string{"custom": "v"}}
		res, err := p.Send(ctx, m)
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		if res.Status != mqclient.SendOK || res.MsgID == "" || res.OffsetMsgID == "" || res.Queue.Topic != topic {
			t.Fatalf("Send result %+v", res)
		}
		want[string(m.Body)] = true
	}
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		body := fmt.Sprintf("async-%d", i)
		want[body] = true
		err := p.SendAsync(ctx, &mqclient.Message{Topic: topic, Body: []byte(body)}, func(res *mqclient.SendResult, err error) {
			defer wg.Done()
			if err != nil || res.Status != mqclient.SendOK {
				t.Errorf("SendAsync callback: %v %+v", err, res)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for i := 0; i < 5; i++ {
		body := fmt.Sprintf("oneway-%d", i)
		want[body] = true
		if err := p.SendOneway(ctx, &mqclient.Message{Topic: topic, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	var batch []*mqclient.Message
	for i := 0; i < 5; i++ {
		body := fmt.Sprintf("batch-%d", i)
		want[body] = true
		batch = append(batch, &mqclient.Message{Topic: topic, Body: []byte(body), Tag: "B"})
	}
	res, err := p.SendBatch(ctx, batch)
	if err != nil {
		t.Fatalf("SendBatch: %v", err)
	}
	if n := len(strings.Split(res.MsgID, ",")); n != 5 {
		t.Fatalf("batch ids %q", res.MsgID)
	}
	big := bytes.Repeat([]byte("z"), 10000) // compressed on the wire
	want[string(big)] = true
	if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: big}); err != nil {
		t.Fatal(err)
	}

	tidetest.WaitFor(t, 15*time.Second, "all messages", func() bool { return rec.Distinct() >= len(want) })
	for _, m := range rec.Messages() {
		if !want[string(m.Body)] {
			t.Errorf("unexpected body %.20q", m.Body)
		}
		if strings.HasPrefix(string(m.Body), "sync-") {
			if m.Tag != "TagA" || len(m.Keys) != 2 || m.Keys[0] != "k1" || m.Properties["custom"] != "v" {
				t.Errorf("sync message lost fields: tag %q keys %v props %v", m.Tag, m.Keys, m.Properties)
			}
		}
	}
}

func TestProducerSelectors(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 8)
	p := e.Producer(t)
	ctx := context.Background()
	queues := map[int32]bool{}
	for i := 0; i < 16; i++ {
		res, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		queues[res.Queue.QueueID] = true
	}
	if len(queues) != 8 {
		t.Errorf("round robin used %d of 8 queues", len(queues))
	}
	// Round robin is per topic: a producer alternating between two topics
	// of 8 queues still uses every queue of each (one counter for all
	// topics would send each topic's messages to every other queue).
	other := e.Topic(t, 8)
	used := map[string]map[int32]bool{topic: {}, other: {}}
	for i := 0; i < 32; i++ {
		tp := []string{topic, other}[i%2]
		res, err := p.Send(ctx, &mqclient.Message{Topic: tp, Body: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		used[tp][res.Queue.QueueID] = true
	}
	for tp, qs := range used {
		if len(qs) != 8 {
			t.Errorf("alternating topics: %s used %d of 8 queues", tp, len(qs))
		}
	}
	for _, key := range []string{"order-1", "order-2", "order-3"} {
		var q int32 = -1
		for i := 0; i < 5; i++ {
			res, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("x"), ShardingKey: key})
			if err != nil {
				t.Fatal(err)
			}
			if q >= 0 && res.Queue.QueueID != q {
				t.Fatalf("key %s went to queues %d and %d", key, q, res.Queue.QueueID)
			}
			q = res.Queue.QueueID
		}
	}
	custom := e.Producer(t, mqclient.WithQueueSelector(mqclient.QueueSelectorFunc(func(m *mqclient.Message, qs []mqclient.Queue) mqclient.Queue {
		return qs[len(qs)-1]
	})))
	res, err := custom.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Queue.QueueID != 7 {
		t.Errorf("custom selector: queue %d, want 7", res.Queue.QueueID)
	}
}

func TestProducerRejectsInvalidMessages(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 1)
	p := e.Producer(t, mqclient.WithMaxMessageSize(1000))
	ctx := context.Background()
	cases := []struct {
		name string
		send func() error
	}{
		{"empty body", func() error { _, err := p.Send(ctx, &mqclient.Message{Topic: topic}); return err }},
		{"bad topic", func() error { _, err := p.Send(ctx, &mqclient.Message{Topic: "a.b", Body: []byte("x")}); return err }},
		{"too large", func() error {
			_, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: make([]byte, 1001)})
			return err
		}},
		{"batch too large", func() error {
			var b []*mqclient.Message
			for i := 0; i < 10; i++ {
				b = append(b, &mqclient.Message{Topic: topic, Body: make([]byte, 200)})
			}
			_, err := p.SendBatch(ctx, b)
			return err
		}},
		{"batch mixed topics", func() error {
			_, err := p.SendBatch(ctx, []*mqclient.Message{{Topic: topic, Body: []byte("a")}, {Topic: topic + "x", Body: []byte("b")}})
			return err
		}},
		{"batch delayed", func() error {
			_, err := p.SendBatch(ctx, []*mqclient.Message{{Topic: topic, Body: []byte("a"), DelayLevel: 2}})
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.send(); !errors.Is(err, mqclient.ErrInvalidMessage) {
				t.Fatalf("got %v, want ErrInvalidMessage", err)
			}
		})
	}
}

func TestProducerLifecycle(t *testing.T) {
	e := startEnv(t)
	p, err := mqclient.NewProducer(e.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.Send(ctx, &mqclient.Message{Topic: "x", Body: []byte("x")}); !errors.Is(err, mqclient.ErrNotStarted) {
		t.Fatalf("before Start: %v", err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); !errors.Is(err, mqclient.ErrStarted) {
		t.Fatalf("second Start: %v", err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, &mqclient.Message{Topic: "x", Body: []byte("x")}); !errors.Is(err, mqclient.ErrClosed) {
		t.Fatalf("after Shutdown: %v", err)
	}
	if _, err := mqclient.NewProducer(); !errors.Is(err, mqclient.ErrInvalidOption) {
		t.Fatalf("no name server: %v", err)
	}
}

func TestProducerAutoCreateTopic(t *testing.T) {
	e := startEnv(t)
	p := e.Producer(t)
	topic := fmt.Sprintf("auto-%d", time.Now().UnixNano()%1e9)
	if _, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte("x")}); err != nil {
		t.Fatalf("send to a new topic: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Admin.WaitTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
}
