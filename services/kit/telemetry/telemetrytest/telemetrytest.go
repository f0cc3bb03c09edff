// Package telemetrytest records the spans a test makes, so that it can
// check which spans a request or a message produced and in which trace.
package telemetrytest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Recorder is a tracer provider that keeps every span, with the spans it
// recorded (Ended, Started).
type Recorder struct {
	*tracetest.SpanRecorder
	Provider *sdktrace.TracerProvider
}

// New returns a Recorder whose provider is shut down when t ends. It is
// not installed anywhere: hand Provider to the code under test.
func New(t testing.TB) *Recorder {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return &Recorder{SpanRecorder: rec, Provider: tp}
}

// Install is New, with the provider made global together with the W3C
// trace-context propagator; the previous provider and propagator come
// back when t ends. Call it before building servers that take their
// tracer from the global provider (Kratos' tracing middleware does).
// Tests that install it must not run in parallel.
func Install(t testing.TB) *Recorder {
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	r := New(t)
	otel.SetTracerProvider(r.Provider)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
	})
	return r
}

// Has reports whether an ended span named name of kind is in trace id.
func (r *Recorder) Has(id trace.TraceID, name string, kind trace.SpanKind) bool {
	for _, sp := range r.Ended() {
		if sp.Name() == name && sp.SpanKind() == kind && sp.SpanContext().TraceID() == id {
			return true
		}
	}
	return false
}
