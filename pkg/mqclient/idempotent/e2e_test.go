package idempotent

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/middleware"
	"github.com/tidemq/tide/pkg/tidetest"
)

// End to end through a real broker with every delivery duplicated
// (middleware.Duplicate) and every fifth event sent twice by the producer
// (new message id, same key): every effect exactly once.
func TestEndToEndDuplicateEveryDelivery(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	common, _, topic := startBroker(t, ctx, "idem", 4)

	var acked atomic.Int64
	h := f.consumer(t, f.rdb, Options{Group: "e2e"}).Wrap(transfer)
	count := func(next mqclient.Handler) mqclient.Handler {
		return func(ctx context.Context, m *mqclient.MessageExt) error {
			err := next(ctx, m)
			if err == nil {
				acked.Add(1)
			}
			return err
		}
	}
	c, err := mqclient.NewPushConsumer("e2e", append(common, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithMiddleware(count, middleware.Duplicate()))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, "*", h); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown(context.Background())

	p, err := mqclient.NewProducer(common...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	const n = 50
	var keys []string
	sent := 0
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("order-%d", i)
		keys = append(keys, key)
		copies := 1
		if i%5 == 0 {
			copies = 2 // producer retry: a new message id, the same event
		}
		for j := 0; j < copies; j++ {
			if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Keys: []string{key}, Body: []byte(`{"amount":10}`)}); err != nil {
				t.Fatal(err)
			}
			sent++
		}
	}
	for acked.Load() < int64(sent) {
		if ctx.Err() != nil {
			t.Fatalf("acked %d of %d messages", acked.Load(), sent)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.checkInvariant(t, keys)
	if hits := f.metric("dedup_hits_total", "group", "e2e"); hits < float64(sent) {
		t.Errorf("dedup hits %v, want >= %d (every duplicated delivery)", hits, sent)
	}
}

// startBroker starts a NameServer and a broker (opts applied) and an Admin,
// creates a topic with queues queues and returns the client options every
// client of the test uses, the Admin and the topic.
func startBroker(t *testing.T, _ context.Context, prefix string, queues int, opts ...func(*broker.Options)) ([]mqclient.Option, *mqclient.Admin, string) {
	t.Helper()
	e := tidetest.Start(t, opts...)
	common := []mqclient.Option{mqclient.WithNameServers(e.NameServer), mqclient.WithLogger(tidetest.Logger()),
		mqclient.WithRouteRefreshInterval(time.Second), mqclient.WithHeartbeatInterval(time.Second),
		mqclient.WithRebalanceInterval(500 * time.Millisecond), mqclient.WithPollTimeout(2 * time.Second)}
	return common, e.Admin, e.CreateTopic(t, prefix+"-", mqclient.TopicConfig{Queues: queues})
}
