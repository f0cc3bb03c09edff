package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemq/tide/pkg/mqclient"
)

func TestTraceContextRoundTrip(t *testing.T) {
	o := Options{Propagator: propagation.TraceContext{}}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	msg := &mqclient.Message{Topic: "t"}
	if err := SendInterceptor(o).BeforeSend(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if msg.Properties["traceparent"] == "" {
		t.Fatalf("no traceparent in %v", msg.Properties)
	}
	var got trace.SpanContext
	h := Middleware(o)(func(ctx context.Context, m *mqclient.MessageExt) error {
		got = trace.SpanContextFromContext(ctx)
		return nil
	})
	if err := h(context.Background(), &mqclient.MessageExt{Message: *msg}); err != nil {
		t.Fatal(err)
	}
	if got.TraceID() != sc.TraceID() {
		t.Fatalf("handler trace %v, want %v", got.TraceID(), sc.TraceID())
	}
}
