package mqclient_test

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

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/tidetest"
)

// keyedLoad sends n messages over keys keys in the background, one
// sender, with body "key:seq", so that per-key order is the send order.
func keyedLoad(t *testing.T, p *mqclient.Producer, topic string, n, keys int, sent *atomic.Int64) <-chan struct{} {
	done := make(chan struct{})
	seq := make([]int, keys)
	go func() {
		defer close(done)
		for i := 0; i < n; i++ {
			k := i % keys
			key := "key-" + strconv.Itoa(k)
			m := &mqclient.Message{Topic: topic, ShardingKey: key, Body: []byte(key + ":" + strconv.Itoa(seq[k]))}
			for {
				_, err := p.Send(context.Background(), m)
				if err == nil {
					break
				}
				if errors.Is(err, mqclient.ErrClosed) {
					return
				}
			}
			seq[k]++
			sent.Add(1)
			if i%5 == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	return done
}

// orderChecker verifies, across consumers, that a key is never handled
// by two handlers at once and that each key's messages are first seen in
// send order (redeliveries of already seen ones are allowed).
type orderChecker struct {
	t        *testing.T
	mu       sync.Mutex
	busy     map[string]string // key -> consumer handling it
	next     map[string]int    // key -> next expected new seq
	seen     map[string]bool   // body
	overlaps atomic.Int32
	gaps     atomic.Int32
	total    atomic.Int64
}

func newOrderChecker(t *testing.T) *orderChecker {
	return &orderChecker{t: t, busy: map[string]string{}, next: map[string]int{}, seen: map[string]bool{}}
}

func (o *orderChecker) handler(who string, hold time.Duration) mqclient.Handler {
	return func(ctx context.Context, m *mqclient.MessageExt) error {
		key, seqS, _ := strings.Cut(string(m.Body), ":")
		seq, _ := strconv.Atoi(seqS)
		o.mu.Lock()
		if other, ok := o.busy[key]; ok {
			o.overlaps.Add(1)
			o.t.Errorf("key %s handled by %s while %s has it", key, who, other)
		}
		o.busy[key] = who
		if !o.seen[string(m.Body)] {
			if seq != o.next[key] {
				o.gaps.Add(1)
				o.t.Errorf("key %s: got seq %d, expected %d", key, seq, o.next[key])
			}
			o.seen[string(m.Body)] = true
			o.next[key] = seq + 1
		}
		o.mu.Unlock()
		if hold > 0 {
			time.Sleep(hold)
		}
		o.mu.Lock()
		delete(o.busy, key)
		o.mu.Unlock()
		o.total.Add(1)
		return nil
	}
}

func (o *orderChecker) distinct() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.seen)
}

func TestPushConsumerRebalanceJoinLeaveUnderLoad(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 8)
	p := e.Producer(t)
	const n = 1500
	rec := tidetest.NewRecorder()
	var sent atomic.Int64
	opts := []mqclient.Option{mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst)}
	a := e.Consumer(t, "g-rebalance", topic, rec.Handle, opts...)
	done := keyedLoad(t, p, topic, n, 50, &sent)
	tidetest.WaitFor(t, 20*time.Second, "a third sent", func() bool { return sent.Load() > n/3 })
	e.Consumer(t, "g-rebalance", topic, rec.Handle, opts...)
	tidetest.WaitFor(t, 20*time.Second, "two thirds sent", func() bool { return sent.Load() > 2*n/3 })
	e.Consumer(t, "g-rebalance", topic, rec.Handle, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := a.Shutdown(ctx); err != nil {
		t.Errorf("shutdown a: %v", err)
	}
	cancel()
	<-done
	tidetest.WaitFor(t, 30*time.Second, "every message", func() bool { return rec.Distinct() == n })
	t.Logf("%d deliveries for %d messages", rec.Total(), n)
}

func TestPushConsumerOrderedRebalanceKeepsKeyOrder(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 8)
	p := e.Producer(t)
	const n = 1200
	chk := newOrderChecker(t)
	var sent atomic.Int64
	opts := []mqclient.Option{mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst), mqclient.WithOrdered()}
	a := e.Consumer(t, "g-ordered", topic, chk.handler("a", time.Millisecond), opts...)
	done := keyedLoad(t, p, topic, n, 40, &sent)
	tidetest.WaitFor(t, 20*time.Second, "a third sent", func() bool { return sent.Load() > n/3 })
	e.Consumer(t, "g-ordered", topic, chk.handler("b", time.Millisecond), opts...)
	tidetest.WaitFor(t, 20*time.Second, "two thirds sent", func() bool { return sent.Load() > 2*n/3 })
	e.Consumer(t, "g-ordered", topic, chk.handler("c", time.Millisecond), opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := a.Shutdown(ctx); err != nil {
		t.Errorf("shutdown a: %v", err)
	}
	cancel()
	<-done
	tidetest.WaitFor(t, 60*time.Second, "every message", func() bool { return chk.distinct() == n })
	t.Logf("%d deliveries for %d messages", chk.total.Load(), n)
}

func TestPushConsumerOrderedFailingKeyBlocksOnlyItself(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 1)
	p := e.Producer(t)
	var mu sync.Mutex
	var order []string
	attempts := map[string]int{}
	h := func(ctx context.Context, m *mqclient.MessageExt) error {
		mu.Lock()
		defer mu.Unlock()
		attempts[string(m.Body)]++
		if string(m.Body) == "bad:0" {
			return errors.New("poison")
		}
		order = append(order, string(m.Body))
		return nil
	}
	e.Consumer(t, "g-poison", topic, h, mqclient.WithOrdered(), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithMaxReconsumeTimes(3), mqclient.WithRetryBackoff(100*time.Millisecond, 200*time.Millisecond))
	for i, body := range []string{"bad:0", "bad:1", "good:0", "good:1", "good:2"} {
		key, _, _ := strings.Cut(body, ":")
		if _, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte(body), ShardingKey: key}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	// The good key flows while bad:0 is retried; bad:1 follows once bad:0
	// went to the DLQ (or, if the broker cannot take it, keeps waiting).
	tidetest.WaitFor(t, 10*time.Second, "good key", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= 3
	})
	mu.Lock()
	if order[0] != "good:0" || order[1] != "good:1" || order[2] != "good:2" {
		t.Errorf("good key order %v", order)
	}
	mu.Unlock()
	tidetest.WaitFor(t, 10*time.Second, "bad:0 retried", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return attempts["bad:0"] >= 3
	})
	if !probeSendBack(t, e) {
		t.Skip("broker does not support CONSUMER_SEND_MSG_BACK yet: the DLQ step is not checked")
	}
	tidetest.WaitFor(t, 10*time.Second, "bad:1 after bad:0 went to the DLQ", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return attempts["bad:1"] == 1
	})
}

func TestPushConsumerShutdownWithInFlight(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 4)
	p := e.Producer(t)
	const n = 200
	for i := 0; i < n; i++ {
		if _, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	first := tidetest.NewRecorder()
	var started atomic.Int32
	slow := func(ctx context.Context, m *mqclient.MessageExt) error {
		started.Add(1)
		time.Sleep(20 * time.Millisecond)
		return first.Handle(ctx, m)
	}
	c := e.Consumer(t, "g-shutdown", topic, slow, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst), mqclient.WithConcurrency(4))
	tidetest.WaitFor(t, 10*time.Second, "some messages", func() bool { return first.Distinct() >= 20 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if s := int(started.Load()); s != first.Total() {
		t.Fatalf("%d handlers started, %d finished: Shutdown returned before in-flight handlers ended", s, first.Total())
	}
	second := tidetest.NewRecorder()
	e.Consumer(t, "g-shutdown", topic, second.Handle)
	tidetest.WaitFor(t, 15*time.Second, "the rest", func() bool {
		all := map[string]bool{}
		for _, m := range first.Messages() {
			all[m.MsgID] = true
		}
		for _, m := range second.Messages() {
			all[m.MsgID] = true
		}
		return len(all) == n
	})
	dup := 0
	for _, m := range second.Messages() {
		if first.Count(m.MsgID) > 0 {
			dup++
		}
	}
	t.Logf("first consumer handled %d, second %d, redelivered %d", first.Distinct(), second.Distinct(), dup)
}

func TestPushConsumerRetryRedelivers(t *testing.T) {
	e := startEnv(t)
	topic := e.Topic(t, 2)
	p := e.Producer(t)
	var mu sync.Mutex
	seen := map[string][]int32{}
	h := func(ctx context.Context, m *mqclient.MessageExt) error {
		mu.Lock()
		defer mu.Unlock()
		seen[string(m.Body)] = append(seen[string(m.Body)], m.ReconsumeTimes)
		if m.Topic != topic {
			t.Errorf("handler saw topic %q, want the original %q", m.Topic, topic)
		}
		if len(seen[string(m.Body)]) == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	}
	e.Consumer(t, "g-retry", topic, h, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithRetryBackoff(100*time.Millisecond, time.Second))
	for i := 0; i < 5; i++ {
		if _, err := p.Send(context.Background(), &mqclient.Message{Topic: topic, Body: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	// Through the broker's retry topic the first redelivery waits for
	// delay level 3 (10 s); through the local fallback, 100 ms.
	tidetest.WaitFor(t, 40*time.Second, "redeliveries", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := 0; i < 5; i++ {
			if len(seen[strconv.Itoa(i)]) < 2 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for b, rt := range seen {
		if rt[1] < 1 {
			t.Errorf("message %s: redelivery has ReconsumeTimes %d", b, rt[1])
		}
	}
}

func TestPushConsumerBrokerRestart(t *testing.T) {
	ns := startEnvNS(t)
	dir := t.TempDir()
	pn := freePort(t) // the restarted broker binds it again
	b1 := brokertest.Start(t, ns, func(o *broker.Options) { o.Store.StorePathRootDir = dir; o.ListenPort = pn })
	e := &env{&tidetest.Env{NameServer: ns, Broker: b1}}
	e.Admin = tidetest.Admin(t, e.Options()...)
	topic := e.Topic(t, 4)
	p := e.Producer(t)
	rec := tidetest.NewRecorder()
	e.Consumer(t, "g-restart", topic, rec.Handle, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	send := func(from, to int) {
		for i := from; i < to; i++ {
			m := &mqclient.Message{Topic: topic, Body: []byte(strconv.Itoa(i))}
			deadline := time.Now().Add(30 * time.Second)
			for {
				_, err := p.Send(context.Background(), m)
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
	send(0, 100)
	tidetest.WaitFor(t, 15*time.Second, "first half", func() bool { return rec.Distinct() == 100 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	brokertest.Start(t, ns, func(o *broker.Options) { o.Store.StorePathRootDir = dir; o.ListenPort = pn })
	send(100, 200)
	tidetest.WaitFor(t, 30*time.Second, "second half", func() bool { return rec.Distinct() == 200 })
}

func startEnvNS(t *testing.T) string {
	t.Helper()
	return nameservertest.Start(t)
}

// probeSendBack reports whether the broker accepts CONSUMER_SEND_MSG_BACK
// (asked once per test binary).
func probeSendBack(t *testing.T, e *env) bool {
	t.Helper()
	return e.probe(t, "sendback")
}

var _ = fmt.Sprint
