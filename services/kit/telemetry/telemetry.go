// Package telemetry sets up a service's OpenTelemetry tracing: a tracer
// provider with the service's resource and an optional OTLP/HTTP exporter,
// the global provider and W3C propagators (Setup), and a slog handler that
// adds the current span's ids to log records (TraceHandler).
package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options describe the service to trace.
type Options struct {
	// Name is the service.name resource attribute (required).
	Name string
	// Version is service.version; empty leaves it out.
	Version string
	// Instance is service.instance.id; empty leaves it out.
	Instance string
	// Endpoint is the OTLP/HTTP traces endpoint: "host:port" is plain
	// HTTP, a URL such as https://collector:4318/v1/traces is used as
	// given. Empty: no exporter.
	Endpoint string
}

// NewTracerProvider returns a tracer provider with a service.name (and
// service.version, service.instance.id) resource. With o.Endpoint set,
// spans are batched to an OTLP/HTTP collector at that endpoint; empty, the
// provider has no exporter: spans still get real trace and span ids, so
// they appear in logs and travel in message properties, but go nowhere.
// The caller installs it (otel.SetTracerProvider) and must Shutdown it on
// exit, which flushes the spans still queued. Creating it does not dial.
func NewTracerProvider(ctx context.Context, o Options) (*sdktrace.TracerProvider, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", o.Name)}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	if o.Instance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", o.Instance))
	}
	// Schemaless, so it merges with the SDK's default resource whatever
	// semconv version that uses.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if ep := strings.TrimSpace(o.Endpoint); ep != "" {
		var eo []otlptracehttp.Option
		if strings.Contains(ep, "://") {
			eo = append(eo, otlptracehttp.WithEndpointURL(ep))
		} else {
			eo = append(eo, otlptracehttp.WithEndpoint(ep), otlptracehttp.WithInsecure())
		}
		exp, err := otlptracehttp.New(ctx, eo...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp exporter %q: %w", ep, err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// Setup installs NewTracerProvider(o) as the global tracer provider and
// the W3C trace-context and baggage propagators, so that Kratos' tracing
// middleware and pkg/mqclient/tracing carry one trace from the HTTP
// request through the messages to the consumers. The returned func
// flushes queued spans (up to 5 s) and shuts the provider down, writing a
// failure to stderr; call it once, after the app stopped.
func Setup(o Options) (func(), error) {
	tp, err := NewTracerProvider(context.Background(), o)
	if err != nil {
		return nil, err
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			fmt.Fprintln(os.Stderr, o.Name+": flush traces:", err)
		}
	}, nil
}

// TraceHandler is a slog.Handler that adds trace_id and span_id to records
// logged with a context that carries a valid span (slog's *Context
// methods), and passes everything else through unchanged. It is as safe
// for concurrent use as the handler it wraps.
type TraceHandler struct{ slog.Handler }

// Handle adds the span's ids, then calls the wrapped handler.
func (h TraceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the wrapper around the derived handler.
func (h TraceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return TraceHandler{h.Handler.WithAttrs(as)}
}

// WithGroup keeps the wrapper around the derived handler.
func (h TraceHandler) WithGroup(name string) slog.Handler {
	return TraceHandler{h.Handler.WithGroup(name)}
}
