package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemq/tide/services/order/internal/conf"
)

// NewTracerProvider returns the service's OpenTelemetry tracer provider
// with a service.name (and service.version, service.instance.id)
// resource. With observability.otlp_endpoint set, spans are batched to an
// OTLP/HTTP collector at that endpoint ("host:port" is plain HTTP; a URL
// such as https://collector:4318/v1/traces is used as given); empty, the
// provider has no exporter: spans still get real trace and span ids, so
// they appear in logs and travel in message properties, but go nowhere.
// The caller installs it (otel.SetTracerProvider) and must Shutdown it on
// exit, which flushes the spans still queued. Creating it does not dial.
func NewTracerProvider(ctx context.Context, c *conf.Observability, name, version, instance string) (*sdktrace.TracerProvider, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	if instance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", instance))
	}
	// Schemaless, so it merges with the SDK's default resource whatever
	// semconv version that uses.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("server: trace resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if ep := strings.TrimSpace(c.GetOtlpEndpoint()); ep != "" {
		var eo []otlptracehttp.Option
		if strings.Contains(ep, "://") {
			eo = append(eo, otlptracehttp.WithEndpointURL(ep))
		} else {
			eo = append(eo, otlptracehttp.WithEndpoint(ep), otlptracehttp.WithInsecure())
		}
		exp, err := otlptracehttp.New(ctx, eo...)
		if err != nil {
			return nil, fmt.Errorf("server: otlp exporter %q: %w", ep, err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	return sdktrace.NewTracerProvider(opts...), nil
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
