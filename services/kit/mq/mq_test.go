package mq_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/kit/mq"
	"github.com/tidemq/tide/services/kit/mq/mqtest"
	"github.com/tidemq/tide/services/kit/topics"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(f string, a ...any) {
	r.mu.Lock()
	r.failed = append(r.failed, fmt.Sprintf(f, a...))
	r.mu.Unlock()
}
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...); panic(r) }
func (r *recorder) Fatal(a ...any)            { r.Fatalf("%s", fmt.Sprint(a...)) }

// check runs mqtest.OneClient on a recorder and returns its failures.
func check(t *testing.T, ns string, groups ...string) (failed []string) {
	r := &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		failed = r.failed
	}()
	mqtest.OneClient(r, ns, groups...)
	return r.failed
}

// start starts a push consumer of group on topic with opts and shuts it
// down at the end of the test.
func start(t *testing.T, group, topic string, opts ...mqclient.Option) {
	c, err := mqclient.NewPushConsumer(group, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, "*", func(context.Context, *mqclient.MessageExt) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(context.Background()) })
}

// TestOneClient: consumers, a producer and an admin on NewClient's Client
// are one client to the broker and hold one connection to the NameServer
// and to the broker (mqtest.OneClient passes); the same members on private
// clients fail the check; the Client's cleanup leaves the members running
// and the connection closes after the last one.
func TestOneClient(t *testing.T) {
	ctx := context.Background()
	ns := nameservertest.Start(t)
	brokertest.Start(t, ns)
	const topic = "one-client"
	if err := topics.Ensure(ctx, []mqclient.Option{mqclient.WithNameServers(ns)}, topic); err != nil {
		t.Fatal(err)
	}
	t.Run("shared", func(t *testing.T) {
		c, cleanup, err := mq.NewClient(ns, "", "", slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := mqclient.NewProducer(append(mq.On(c), mqclient.WithProducerGroup("one-client-p"))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		start(t, "one-client-a", topic, mq.On(c)...)
		start(t, "one-client-b", topic, mq.On(c)...)
		if err := topics.Ensure(ctx, mq.On(c), topic); err != nil { // an admin joins and leaves
			t.Fatal(err)
		}
		cleanup() // the members still run on it
		if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("x")}); err != nil {
			t.Fatalf("send after the Client's cleanup: %v", err)
		}
		if failed := check(t, ns, "one-client-a", "one-client-b"); len(failed) > 0 {
			t.Fatalf("shared client: %v", failed)
		}
		p.Shutdown(ctx)
	})
	t.Run("private", func(t *testing.T) {
		start(t, "one-client-c", topic, mqclient.WithNameServers(ns))
		start(t, "one-client-d", topic, mqclient.WithNameServers(ns))
		failed := check(t, ns, "one-client-c", "one-client-d")
		t.Logf("private clients: %q", failed)
		if len(failed) < 2 {
			t.Fatalf("two private clients passed the check: %v", failed)
		}
	})
}
