package telemetrytest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

func TestInstallAndHas(t *testing.T) {
	prev := otel.GetTracerProvider()
	t.Run("installed", func(t *testing.T) {
		r := Install(t)
		ctx, parent := otel.Tracer("test").Start(context.Background(), "parent", trace.WithSpanKind(trace.SpanKindServer))
		_, child := otel.Tracer("test").Start(ctx, "child", trace.WithSpanKind(trace.SpanKindProducer))
		child.End()
		id := parent.SpanContext().TraceID()
		if !r.Has(id, "child", trace.SpanKindProducer) {
			t.Error("ended child span not found")
		}
		if r.Has(id, "parent", trace.SpanKindServer) {
			t.Error("parent found before it ended")
		}
		if r.Has(id, "child", trace.SpanKindConsumer) || r.Has(trace.TraceID{1}, "child", trace.SpanKindProducer) {
			t.Error("span found with another kind or trace")
		}
		parent.End()
	})
	if otel.GetTracerProvider() != prev {
		t.Fatal("global provider not restored")
	}
}
