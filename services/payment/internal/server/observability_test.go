package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	orderv1 "github.com/tidemq/tide/api/order/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/kit/telemetry/telemetrytest"
	"github.com/tidemq/tide/services/kit/topics/topicstest"
)

// TestServerTraceSpans: POST /v1/payments (Kratos' HTTP server span),
// the PaymentSucceeded send (producer span) and an order stand-in's
// consumer span share one trace; and an OrderCancelled sent in another
// trace is consumed by the service in that trace, whose refund event is
// sent and consumed in it too.
func TestServerTraceSpans(t *testing.T) {
	rec := telemetrytest.New(t)
	s := startStack(t, func(c *stackConfig) { c.tp = rec.Provider })

	r := s.pay(t, "trace-1", "otr1", "u-alice", 5)
	if r.status != 200 {
		t.Fatalf("pay: %d %s", r.status, r.raw)
	}
	var root trace.TraceID
	for _, sp := range rec.Ended() {
		if sp.SpanKind() == trace.SpanKindServer && strings.Contains(sp.Name(), "CreatePayment") {
			root = sp.SpanContext().TraceID()
		}
	}
	if !root.IsValid() {
		t.Fatal("no HTTP server span for CreatePayment")
	}
	waitFor(t, "send and consume spans in the request's trace", func() bool {
		return rec.Has(root, eventv1.TopicPaymentEvents+" send", trace.SpanKindProducer) &&
			rec.Has(root, eventv1.TopicPaymentEvents+" process", trace.SpanKindConsumer)
	})

	// The order is cancelled after the payment: the service consumes the
	// cancellation (consumer span) and refunds (send span), all in the
	// cancellation's trace.
	s.orders.set("otr1", orderv1.OrderStatus_ORDER_STATUS_CANCELLED)
	ctx, span := otel.Tracer("test").Start(context.Background(), "order service: cancel")
	s.cancelOrderCtx(t, ctx, "otr1")
	span.End()
	cancelTrace := span.SpanContext().TraceID()
	waitFor(t, "refund spans in the cancellation's trace", func() bool {
		return rec.Has(cancelTrace, eventv1.TopicOrderEvents+" process", trace.SpanKindConsumer) &&
			rec.Has(cancelTrace, eventv1.TopicPaymentEvents+" send", trace.SpanKindProducer) &&
			rec.Has(cancelTrace, eventv1.TopicPaymentEvents+" process", trace.SpanKindConsumer)
	})
}

// cancelOrderCtx sends OrderCancelled with ctx's trace context.
func (s *stack) cancelOrderCtx(t *testing.T, ctx context.Context, order string) {
	t.Helper()
	body, _ := eventv1.Marshal(&eventv1.OrderCancelled{OrderId: order, Seq: 3, Reason: "timeout"})
	if _, err := s.prod.Send(ctx, &mqclient.Message{Topic: eventv1.TopicOrderEvents, Tag: eventv1.TagOrderCancelled,
		Body: body, ShardingKey: order, Keys: []string{order}}); err != nil {
		t.Fatal(err)
	}
}

// TestServerBrokerCredentials: against a broker with aclEnable, the
// service's transactional producer, consumer, topic admin and broker
// reconciliation job sign with messaging.access_key/secret_key, while an
// unsigned client is refused.
func TestServerBrokerCredentials(t *testing.T) {
	s := startStack(t, func(c *stackConfig) { c.acl = topicstest.Admin(t, "paymentKey", "paymentSecret") })
	topicstest.RefusesUnsigned(t, s.ns, eventv1.TopicPaymentEvents)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if r := s.pay(t, "acl-1", "oacl1", "u-alice", 5); r.status != 200 {
		t.Fatalf("pay: %d %s", r.status, r.raw)
	}
	waitFor(t, "PaymentSucceeded", func() bool { return s.events.n(eventv1.TagPaymentSucceeded, "oacl1") == 1 })
	s.orders.set("oacl1", orderv1.OrderStatus_ORDER_STATUS_CANCELLED)
	s.cancelOrder(t, "oacl1")
	waitFor(t, "PaymentRefunded", func() bool { return s.events.n(eventv1.TagPaymentRefunded, "oacl1") == 1 })
	if _, err := s.rc.Run(ctx, "broker", true); err != nil {
		t.Fatalf("broker reconciliation with credentials: %v", err)
	}
}
