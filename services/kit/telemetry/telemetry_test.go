package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestTracerProvider: without an endpoint the provider still makes real
// spans with the service.name resource; with one, Shutdown flushes the
// spans to the OTLP/HTTP endpoint.
func TestTracerProvider(t *testing.T) {
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	for _, tc := range []struct {
		name      string
		endpoint  string
		wantPosts int32
	}{
		{"no exporter", "", 0},
		{"host:port", collector.Listener.Addr().String(), 1},
		{"url", collector.URL + "/v1/traces", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			posts.Store(0)
			ctx := context.Background()
			tp, err := NewTracerProvider(ctx, Options{Name: "order", Version: "test", Instance: "i1", Endpoint: tc.endpoint})
			if err != nil {
				t.Fatal(err)
			}
			_, span := tp.Tracer("test").Start(ctx, "op")
			if !span.SpanContext().IsValid() {
				t.Fatal("span has no valid context")
			}
			span.End()
			if err := tp.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if got := posts.Load(); got != tc.wantPosts {
				t.Errorf("collector got %d posts, want %d", got, tc.wantPosts)
			}
		})
	}
	tp, err := NewTracerProvider(context.Background(), Options{Name: "order"})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Shutdown(context.Background())
	_, span := tp.Tracer("test").Start(context.Background(), "op")
	defer span.End()
	ro, ok := span.(sdktrace.ReadOnlySpan)
	if !ok {
		t.Fatalf("span %T is not an SDK span", span)
	}
	if v, _ := ro.Resource().Set().Value(attribute.Key("service.name")); v.AsString() != "order" {
		t.Errorf("service.name = %q", v.AsString())
	}
}

// TestTraceHandler: records logged with a span's context carry its ids;
// others are unchanged.
func TestTraceHandler(t *testing.T) {
	tp, err := NewTracerProvider(context.Background(), Options{Name: "order"})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Shutdown(context.Background())
	var buf bytes.Buffer
	l := slog.New(TraceHandler{Handler: slog.NewJSONHandler(&buf, nil)}).With("module", "m")
	ctx, span := tp.Tracer("test").Start(context.Background(), "op")
	l.InfoContext(ctx, "with span")
	span.End()
	l.Info("without span")
	dec := json.NewDecoder(&buf)
	var with, without map[string]any
	if err := dec.Decode(&with); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&without); err != nil {
		t.Fatal(err)
	}
	if with["trace_id"] != span.SpanContext().TraceID().String() || with["span_id"] != span.SpanContext().SpanID().String() ||
		with["module"] != "m" {
		t.Errorf("record with span: %v", with)
	}
	if _, ok := without["trace_id"]; ok {
		t.Errorf("record without span has trace_id: %v", without)
	}
}

// TestSetup: the provider and the W3C propagator become global; the stop
// func shuts the provider down.
func TestSetup(t *testing.T) {
	stop, err := Setup(Options{Name: "svc", Instance: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := otel.Tracer("test").Start(context.Background(), "op")
	if !span.SpanContext().IsValid() {
		t.Fatal("global provider makes no valid spans")
	}
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	if carrier.Get("traceparent") == "" {
		t.Fatalf("no traceparent injected: %v", carrier)
	}
	span.End()
	stop()
}
