package server

import (
	"context"
	nethttp "net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/tracing"
	"github.com/tidemq/tide/services/kit/mq/mqtest"
	"github.com/tidemq/tide/services/kit/telemetry/telemetrytest"
	"github.com/tidemq/tide/services/kit/topics/topicstest"
)

// TestServerTraceSpans: an order service stand-in's trace (an HTTP call
// to the inventory API, then OrderCreated) continues in the inventory
// service's HTTP server span, its consumer span, the outbox relay's
// StockReserved send span (the trace context travels through the outbox
// row) and the consumer span of a reader of inventory events.
func TestServerTraceSpans(t *testing.T) {
	// Before startStack: Kratos' tracing middleware takes its tracer from
	// the global provider when the server is built.
	rec := telemetrytest.Install(t)
	s := startStack(t, false)

	mqtest.Consume(t, "test-trace-order", s.clientOpts(mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
		mqclient.WithMiddleware(tracing.Middleware(tracing.Options{}))), eventv1.TopicInventoryEvents, "*",
		func(context.Context, *mqclient.MessageExt) error { return nil })

	ctx, span := otel.Tracer("test").Start(context.Background(), "order service: create order")
	root := span.SpanContext().TraceID()
	req, _ := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, s.httpURL+"/v1/products/p-mug", nil)
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s.sendCtx(t, ctx, &eventv1.OrderCreated{OrderId: "o-trace", Seq: 1, Items: []*eventv1.LineItem{{ProductId: "p-mug", Quantity: 1}}})
	span.End()

	waitFor(t, "the chain's spans in one trace", func() bool {
		server := false
		for _, sp := range rec.Ended() {
			server = server || (sp.SpanKind() == trace.SpanKindServer && sp.SpanContext().TraceID() == root)
		}
		return server &&
			rec.Has(root, eventv1.TopicOrderEvents+" process", trace.SpanKindConsumer) &&
			rec.Has(root, eventv1.TopicInventoryEvents+" send", trace.SpanKindProducer) &&
			rec.Has(root, eventv1.TopicInventoryEvents+" process", trace.SpanKindConsumer)
	})
}

// TestServerBrokerCredentials: against a broker with aclEnable, the
// service's consumer, outbox producer and topic admin sign with
// messaging.access_key/secret_key, so an order's stock is reserved and
// StockReserved delivered, while an unsigned client is refused.
func TestServerBrokerCredentials(t *testing.T) {
	s := startStack(t, false, func(c *stackConfig) { c.acl = topicstest.Admin(t, "inventoryKey", "inventorySecret") })
	topicstest.RefusesUnsigned(t, s.ns, eventv1.TopicOrderEvents)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	got := make(chan string, 4)
	mqtest.Consume(t, "test-acl-order", s.clientOpts(mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst)), eventv1.TopicInventoryEvents, "*",
		func(_ context.Context, m *mqclient.MessageExt) error {
			got <- m.Tag + "/" + m.ShardingKey
			return nil
		})
	s.send(t, &eventv1.OrderCreated{OrderId: "o-acl", Seq: 1, Items: []*eventv1.LineItem{{ProductId: "p-mug", Quantity: 1}}})
	select {
	case m := <-got:
		if m != eventv1.TagStockReserved+"/o-acl" {
			t.Fatalf("got %s, want StockReserved for o-acl", m)
		}
	case <-ctx.Done():
		t.Fatal("no StockReserved through the signed outbox producer")
	}
}
