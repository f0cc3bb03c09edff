package server

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/tracing"
	"github.com/tidemq/tide/services/kit/mq/mqtest"
	"github.com/tidemq/tide/services/kit/telemetry/telemetrytest"
	"github.com/tidemq/tide/services/kit/topics/topicstest"
)

// TestServerTraceSpans: one trace follows an order from POST /v1/orders
// (Kratos' HTTP server span) through the OrderCreated send (producer
// span), an inventory stand-in's consumer span, its StockReserved reply
// and the order service's own consumer span for that reply.
func TestServerTraceSpans(t *testing.T) {
	// Before startStack: Kratos' tracing middleware takes its tracer from
	// the global provider when the server is built.
	rec := telemetrytest.Install(t)
	s := startStack(t, time.Hour)

	// The inventory stand-in answers OrderCreated with StockReserved in
	// the consumer span's context.
	p, err := mqclient.NewProducer(s.clientOpts(mqclient.WithProducerGroup("test-trace-inventory-producer"),
		mqclient.WithSendInterceptors(tracing.SendInterceptor(tracing.Options{})))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	mqtest.Consume(t, "test-trace-inventory", s.clientOpts(mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithOrdered(), mqclient.WithMiddleware(tracing.Middleware(tracing.Options{}))), eventv1.TopicOrderEvents, eventv1.TagOrderCreated,
		func(ctx context.Context, m *mqclient.MessageExt) error {
			ev := &eventv1.StockReserved{OrderId: m.ShardingKey, Seq: 1}
			body, err := eventv1.Marshal(ev)
			if err != nil {
				return err
			}
			_, err = p.Send(ctx, &mqclient.Message{Topic: eventv1.TopicInventoryEvents, Tag: eventv1.Tag(ev),
				Keys: []string{ev.OrderId}, ShardingKey: ev.OrderId, Body: body})
			return err
		})

	o, code, body := s.httpCreate(t, `{"user_id":"u-spans","items":[{"product_id":"p1","quantity":1}]}`)
	if code != 200 {
		t.Fatalf("POST: %d %s", code, body)
	}
	id := o.GetOrder().GetId()
	waitFor(t, "RESERVED", func() bool {
		got, _ := s.httpGet(t, id)
		return got.GetOrder().GetStatus() == orderv1.OrderStatus_ORDER_STATUS_RESERVED
	})

	var root trace.TraceID
	for _, sp := range rec.Ended() {
		if sp.SpanKind() == trace.SpanKindServer && strings.Contains(sp.Name(), "CreateOrder") {
			root = sp.SpanContext().TraceID()
		}
	}
	if !root.IsValid() {
		t.Fatalf("no HTTP server span for CreateOrder among %v", names(rec.Ended()))
	}
	// Every span of the chain, in the trace of the HTTP request; the last
	// one ends after the handler returned, so wait for it.
	want := []struct {
		name string
		kind trace.SpanKind
	}{
		{eventv1.TopicOrderEvents + " send", trace.SpanKindProducer},
		{eventv1.TopicOrderEvents + " process", trace.SpanKindConsumer},
		{eventv1.TopicInventoryEvents + " process", trace.SpanKindConsumer},
	}
	waitFor(t, "the chain's spans", func() bool {
		for _, w := range want {
			found := false
			for _, sp := range rec.Ended() {
				if sp.Name() == w.name && sp.SpanKind() == w.kind && sp.SpanContext().TraceID() == root {
					found = true
				}
			}
			if !found {
				return false
			}
		}
		return true
	})
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	out := make([]string, 0, len(spans))
	for _, sp := range spans {
		out = append(out, sp.Name()+"/"+sp.SpanKind().String()+"/"+sp.SpanContext().TraceID().String())
	}
	return out
}

// TestServerBrokerCredentials: against a broker with aclEnable, the
// service's sender, scheduler, admin and consumers sign with
// mq.access_key/secret_key, so the flow works, while an unsigned client
// is refused.
func TestServerBrokerCredentials(t *testing.T) {
	s := startStack(t, time.Hour, func(c *stackConfig) { c.acl = topicstest.Admin(t, "orderKey", "orderSecret") })
	topicstest.RefusesUnsigned(t, s.namesrv, eventv1.TopicOrderEvents)

	o, code, body := s.httpCreate(t, `{"user_id":"u-acl","items":[{"product_id":"p1","quantity":1}]}`)
	if code != 200 {
		t.Fatalf("POST: %d %s", code, body)
	}
	id := o.GetOrder().GetId()
	waitFor(t, "OrderCreated", func() bool { return len(s.tags(id)) == 1 })
	s.publish(t, eventv1.TopicInventoryEvents, &eventv1.StockReserved{OrderId: id, Seq: 1})
	waitFor(t, "RESERVED", func() bool {
		got, _ := s.httpGet(t, id)
		return got.GetOrder().GetStatus() == orderv1.OrderStatus_ORDER_STATUS_RESERVED
	})
}
