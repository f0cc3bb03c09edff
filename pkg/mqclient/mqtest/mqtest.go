// Package mqtest is a conformance suite for RocketMQ-protocol brokers as
// seen through package mqclient, in the shape of watermill's
// tests.TestPubSub: Run takes the broker's NameServer addresses and the
// Features the broker claims, and runs one subtest per behaviour, skipping
// those of features switched off. Delivery is at least once, so the suite
// de-duplicates by message id: duplicates are tolerated, loss is not.
//
// It imports only the standard library, package mqclient and
// pkg/remoting, so a broker's own tests can run it:
//
//	mqtest.Run(t, mqtest.Config{NameServers: []string{addr}, Features: mqtest.Features{Ordered: true}})
package mqtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Features says what the broker under test supports.
type Features struct {
	// Ordered: per-key order with ordered consumers (queue locks).
	Ordered bool
	// Broadcast: broadcasting consumers.
	Broadcast bool
	// Retry: CONSUMER_SEND_MSG_BACK and the %RETRY% topic (a failed
	// message comes back with ReconsumeTimes > 0 after about 10 s).
	Retry bool
	// Delay: RocketMQ 4 delay levels.
	Delay bool
	// Timer: RocketMQ 5 arbitrary delivery times (DeliverAt).
	Timer bool
	// Restart, if set, restarts the broker (keeping its data); the
	// Reconnect case runs only then.
	Restart func(t *testing.T)
}

// Config configures Run.
type Config struct {
	NameServers []string
	Features    Features
	// Options are added to every client the suite creates.
	Options []mqclient.Option
	// Messages scales the message counts (default 100).
	Messages int
	// Timeout bounds each wait for deliveries (default 30 s).
	Timeout time.Duration
}

var seq atomic.Int64

type suite struct {
	t     *testing.T
	cfg   Config
	admin *mqclient.Admin
}

// Run runs every case the features allow, as subtests of t.
func Run(t *testing.T, cfg Config) {
	if cfg.Messages <= 0 {
		cfg.Messages = 100
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	s := &suite{t: t, cfg: cfg}
	a, err := mqclient.NewAdmin(s.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(context.Background())
	s.admin = a
	cases := []struct {
		name string
		on   bool
		f    func(*testing.T)
	}{
		{"PublishSubscribe", true, s.publishSubscribe},
		{"SendModes", true, s.sendModes},
		{"ConcurrentSubscribe", true, s.concurrentSubscribe},
		{"TopicIsolation", true, s.topicIsolation},
		{"ConsumerGroups", true, s.consumerGroups},
		{"ResendOnError", true, s.resendOnError},
		{"ContinueAfterClose", true, s.continueAfterClose},
		{"TagFilter", true, s.tagFilter},
		{"PublishSubscribeInOrder", cfg.Features.Ordered, s.inOrder},
		{"Broadcast", cfg.Features.Broadcast, s.broadcast},
		{"BrokerRetry", cfg.Features.Retry, s.brokerRetry},
		{"DelayLevel", cfg.Features.Delay, s.delayLevel},
		{"DeliverAt", cfg.Features.Timer, s.deliverAt},
		{"Reconnect", cfg.Features.Restart != nil, s.reconnect},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !c.on {
				t.Skip("feature not claimed by the broker under test")
			}
			c.f(t)
		})
	}
}

func (s *suite) opts(extra ...mqclient.Option) []mqclient.Option {
	o := []mqclient.Option{
		mqclient.WithNameServers(s.cfg.NameServers...),
		mqclient.WithRebalanceInterval(500 * time.Millisecond),
		mqclient.WithCommitInterval(200 * time.Millisecond),
		mqclient.WithHeartbeatInterval(time.Second),
		mqclient.WithRouteRefreshInterval(time.Second),
		mqclient.WithLockInterval(time.Second),
		mqclient.WithPollTimeout(2 * time.Second),
	}
	o = append(o, s.cfg.Options...)
	return append(o, extra...)
}

func name(prefix string) string {
	return fmt.Sprintf("mqtest-%s-%d-%d", prefix, time.Now().UnixNano()%1e7, seq.Add(1))
}

func (s *suite) topic(t *testing.T, queues int) string {
	t.Helper()
	topic := name("t")
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	if err := s.admin.CreateTopic(ctx, topic, mqclient.TopicConfig{Queues: queues}); err != nil {
		t.Fatal(err)
	}
	if err := s.admin.WaitTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	return topic
}

func (s *suite) producer(t *testing.T) *mqclient.Producer {
	t.Helper()
	p, err := mqclient.NewProducer(s.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	return p
}

func (s *suite) consumer(t *testing.T, group, topic, expr string, h mqclient.Handler, extra ...mqclient.Option) *mqclient.PushConsumer {
	t.Helper()
	c, err := mqclient.NewPushConsumer(group, s.opts(append([]mqclient.Option{mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst)}, extra...)...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, expr, h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		defer cancel()
		c.Shutdown(ctx)
	})
	return c
}

// sink de-duplicates deliveries by body.
type sink struct {
	mu    sync.Mutex
	seen  map[string]*mqclient.MessageExt
	count int
}

func newSink() *sink { return &sink{seen: map[string]*mqclient.MessageExt{}} }

func (k *sink) handle(_ context.Context, m *mqclient.MessageExt) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.seen[string(m.Body)]; !ok {
		k.seen[string(m.Body)] = m
	}
	k.count++
	return nil
}

func (k *sink) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.seen)
}

func (s *suite) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(s.cfg.Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", s.cfg.Timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *suite) send(t *testing.T, p *mqclient.Producer, topic string, n int, mk func(i int) *mqclient.Message) {
	t.Helper()
	for i := 0; i < n; i++ {
		m := mk(i)
		m.Topic = topic
		if _, err := p.Send(context.Background(), m); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
}

func body(i int) []byte { return []byte(strconv.Itoa(i)) }

func (s *suite) publishSubscribe(t *testing.T) {
	topic := s.topic(t, 4)
	p := s.producer(t)
	k := newSink()
	s.consumer(t, name("g"), topic, "*", k.handle)
	n := s.cfg.Messages
	s.send(t, p, topic, n, func(i int) *mqclient.Message {
		return &mqclient.Message{Body: body(i), Tag: "tag", Keys: []string{"key" + strconv.Itoa(i)},
			Properties: map[string]string{"meta": strconv.Itoa(i)}}
	})
	s.wait(t, "all messages", func() bool { return k.len() == n })
	k.mu.Lock()
	defer k.mu.Unlock()
	for b, m := range k.seen {
		if m.Properties["meta"] != b || m.Tag != "tag" || len(m.Keys) != 1 || m.Keys[0] != "key"+b || m.Topic != topic {
			t.Errorf("message %s arrived changed: %+v", b, m.Message)
		}
	}
}

func (s *suite) sendModes(t *testing.T) {
	topic := s.topic(t, 4)
	p := s.producer(t)
	k := newSink()
	s.consumer(t, name("g"), topic, "*", k.handle)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		if err := p.SendAsync(ctx, &mqclient.Message{Topic: topic, Body: []byte("async" + strconv.Itoa(i))}, func(_ *mqclient.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if err := p.SendOneway(ctx, &mqclient.Message{Topic: topic, Body: []byte("oneway" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	var batch []*mqclient.Message
	for i := 0; i < 10; i++ {
		batch = append(batch, &mqclient.Message{Topic: topic, Body: []byte("batch" + strconv.Itoa(i))})
	}
	if _, err := p.SendBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	s.wait(t, "30 messages", func() bool { return k.len() == 30 })
}

func (s *suite) concurrentSubscribe(t *testing.T) {
	topic := s.topic(t, 8)
	p := s.producer(t)
	k := newSink()
	group := name("g")
	for i := 0; i < 4; i++ {
		s.consumer(t, group, topic, "*", k.handle)
	}
	n := s.cfg.Messages * 5
	var wg sync.WaitGroup
	for w := 0; w < 10; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 10 {
				if _, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: body(i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	s.wait(t, "all messages", func() bool { return k.len() == n })
}

func (s *suite) topicIsolation(t *testing.T) {
	t1, t2 := s.topic(t, 2), s.topic(t, 2)
	p := s.producer(t)
	k1, k2 := newSink(), newSink()
	g := name("g")
	s.consumer(t, g+"-1", t1, "*", k1.handle)
	s.consumer(t, g+"-2", t2, "*", k2.handle)
	s.send(t, p, t1, 10, func(i int) *mqclient.Message { return &mqclient.Message{Body: []byte("one" + strconv.Itoa(i))} })
	s.send(t, p, t2, 10, func(i int) *mqclient.Message { return &mqclient.Message{Body: []byte("two" + strconv.Itoa(i))} })
	s.wait(t, "both topics", func() bool { return k1.len() == 10 && k2.len() == 10 })
	k1.mu.Lock()
	defer k1.mu.Unlock()
	for b := range k1.seen {
		if !strings.HasPrefix(b, "one") {
			t.Errorf("topic 1 got %s", b)
		}
	}
}

func (s *suite) consumerGroups(t *testing.T) {
	topic := s.topic(t, 4)
	p := s.producer(t)
	k1, k2 := newSink(), newSink()
	s.consumer(t, name("g"), topic, "*", k1.handle)
	s.consumer(t, name("g"), topic, "*", k2.handle)
	n := s.cfg.Messages
	s.send(t, p, topic, n, func(i int) *mqclient.Message { return &mqclient.Message{Body: body(i)} })
	s.wait(t, "both groups", func() bool { return k1.len() == n && k2.len() == n })
}

func (s *suite) resendOnError(t *testing.T) {
	topic := s.topic(t, 2)
	p := s.producer(t)
	k := newSink()
	var fails atomic.Int32
	h := func(ctx context.Context, m *mqclient.MessageExt) error {
		if fails.Add(1) <= 2 {
			return errors.New("nack")
		}
		return k.handle(ctx, m)
	}
	s.consumer(t, name("g"), topic, "*", h, mqclient.WithRetryBackoff(50*time.Millisecond, 100*time.Millisecond))
	s.send(t, p, topic, 20, func(i int) *mqclient.Message { return &mqclient.Message{Body: body(i)} })
	s.wait(t, "nacked messages redelivered", func() bool { return k.len() == 20 })
}

func (s *suite) continueAfterClose(t *testing.T) {
	topic := s.topic(t, 4)
	p := s.producer(t)
	n := s.cfg.Messages * 3
	s.send(t, p, topic, n, func(i int) *mqclient.Message { return &mqclient.Message{Body: body(i)} })
	k := newSink()
	group := name("g")
	for round := 0; round < 10 && k.len() < n; round++ {
		c, err := mqclient.NewPushConsumer(group, s.opts(mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))...)
		if err != nil {
			t.Fatal(err)
		}
		c.Subscribe(topic, "*", k.handle)
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		target := min(n, k.len()+n/4)
		deadline := time.Now().Add(s.cfg.Timeout)
		for k.len() < target && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
		if err := c.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	if k.len() != n {
		t.Fatalf("%d of %d messages after repeated closes", k.len(), n)
	}
}

func (s *suite) tagFilter(t *testing.T) {
	topic := s.topic(t, 2)
	p := s.producer(t)
	k := newSink()
	s.consumer(t, name("g"), topic, "A || C", k.handle)
	tags := []string{"A", "B", "C"}
	s.send(t, p, topic, 30, func(i int) *mqclient.Message { return &mqclient.Message{Body: body(i), Tag: tags[i%3]} })
	s.wait(t, "tags A and C", func() bool { return k.len() == 20 })
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, m := range k.seen {
		if m.Tag == "B" {
			t.Errorf("tag B delivered")
		}
	}
}

func (s *suite) inOrder(t *testing.T) {
	topic := s.topic(t, 8)
	p := s.producer(t)
	const types = 16
	n := s.cfg.Messages * 5
	var mu sync.Mutex
	next := map[string]int{}
	seen := map[string]bool{}
	h := func(ctx context.Context, m *mqclient.MessageExt) error {
		key, v, _ := strings.Cut(string(m.Body), ":")
		i, _ := strconv.Atoi(v)
		mu.Lock()
		defer mu.Unlock()
		if seen[string(m.Body)] {
			return nil
		}
		if i != next[key] {
			t.Errorf("key %s: got %d, want %d", key, i, next[key])
		}
		seen[string(m.Body)] = true
		next[key] = i + 1
		return nil
	}
	group := name("g")
	for i := 0; i < 3; i++ {
		s.consumer(t, group, topic, "*", h, mqclient.WithOrdered())
	}
	counts := make([]int, types)
	s.send(t, p, topic, n, func(i int) *mqclient.Message {
		key := "type" + strconv.Itoa(i%types)
		m := &mqclient.Message{ShardingKey: key, Body: []byte(key + ":" + strconv.Itoa(counts[i%types]))}
		counts[i%types]++
		return m
	})
	s.wait(t, "all ordered messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	})
}

func (s *suite) broadcast(t *testing.T) {
	topic := s.topic(t, 2)
	p := s.producer(t)
	group := name("g")
	k1, k2 := newSink(), newSink()
	s.consumer(t, group, topic, "*", k1.handle, mqclient.WithMessageModel(mqclient.Broadcasting),
		mqclient.WithOffsetDir(t.TempDir()), mqclient.WithInstanceName("one"))
	s.consumer(t, group, topic, "*", k2.handle, mqclient.WithMessageModel(mqclient.Broadcasting),
		mqclient.WithOffsetDir(t.TempDir()), mqclient.WithInstanceName("two"))
	s.send(t, p, topic, 20, func(i int) *mqclient.Message { return &mqclient.Message{Body: body(i)} })
	s.wait(t, "every member gets everything", func() bool { return k1.len() == 20 && k2.len() == 20 })
}

func (s *suite) brokerRetry(t *testing.T) {
	topic := s.topic(t, 2)
	p := s.producer(t)
	var mu sync.Mutex
	times := map[string][]int32{}
	h := func(ctx context.Context, m *mqclient.MessageExt) error {
		mu.Lock()
		defer mu.Unlock()
		times[string(m.Body)] = append(times[string(m.Body)], m.ReconsumeTimes)
		if m.Topic != topic {
			t.Errorf("retried message has topic %s", m.Topic)
		}
		if len(times[string(m.Body)]) == 1 {
			return errors.New("retry me")
		}
		return nil
	}
	s.consumer(t, name("g"), topic, "*", h)
	s.send(t, p, topic, 3, func(i int) *mqclient.Message { return &mqclient.Message{Body: body(i)} })
	s.wait(t, "broker redelivery", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := 0; i < 3; i++ {
			if len(times[strconv.Itoa(i)]) < 2 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for b, ts := range times {
		if ts[1] < 1 {
			t.Errorf("message %s: redelivery ReconsumeTimes %d", b, ts[1])
		}
	}
}

func (s *suite) delayLevel(t *testing.T) {
	topic := s.topic(t, 2)
	p := s.producer(t)
	got := make(chan time.Time, 1)
	s.consumer(t, name("g"), topic, "*", func(ctx context.Context, m *mqclient.MessageExt) error {
		select {
		case got <- time.Now():
		default:
		}
		return nil
	})
	sent := time.Now()
	if _, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte("later"), DelayLevel: 2}); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-got:
		if d := at.Sub(sent); d < 4500*time.Millisecond {
			t.Fatalf("delay level 2 (5 s) delivered after %v", d)
		}
	case <-time.After(s.cfg.Timeout):
		t.Fatal("delayed message never delivered")
	}
}

func (s *suite) deliverAt(t *testing.T) {
	topic := s.topic(t, 2)
	p := s.producer(t)
	k := newSink()
	var at sync.Map
	s.consumer(t, name("g"), topic, "*", func(ctx context.Context, m *mqclient.MessageExt) error {
		at.Store(string(m.Body), time.Now())
		return k.handle(ctx, m)
	})
	when := time.Now().Add(3 * time.Second)
	if _, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte("kept"), DeliverAt: when}); err != nil {
		t.Fatal(err)
	}
	res, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte("recalled"), DeliverAt: when})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Recall(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	s.wait(t, "timer message", func() bool { return k.len() >= 1 })
	v, _ := at.Load("kept")
	if ts, ok := v.(time.Time); !ok || ts.Before(when) {
		t.Fatalf("timer message delivered at %v, before %v", v, when)
	}
	time.Sleep(2 * time.Second) // a recalled timer must stay silent past its time
	if _, ok := at.Load("recalled"); ok {
		t.Fatal("recalled timer message was delivered")
	}
}

func (s *suite) reconnect(t *testing.T) {
	topic := s.topic(t, 4)
	p := s.producer(t)
	k := newSink()
	s.consumer(t, name("g"), topic, "*", k.handle)
	n := s.cfg.Messages * 2
	sendRetrying := func(from, to int) {
		for i := from; i < to; i++ {
			deadline := time.Now().Add(s.cfg.Timeout)
			for {
				_, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: body(i)})
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("send %d: %v", i, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	sendRetrying(0, n/2)
	s.cfg.Features.Restart(t)
	sendRetrying(n/2, n)
	s.wait(t, "all messages across the restart", func() bool { return k.len() == n })
}
