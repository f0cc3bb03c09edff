package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/server"
)

// setupTracing installs the service's tracer provider (exporting over
// OTLP/HTTP when observability.otlp_endpoint is set) and the W3C
// trace-context propagator, so that Kratos' tracing middleware and
// pkg/mqclient/tracing carry one trace from the HTTP request through the
// messages to the consumers. The returned func flushes queued spans and
// shuts the provider down; call it once, after the app stopped.
func setupTracing(c *conf.Observability, instance string) (func(), error) {
	tp, err := server.NewTracerProvider(context.Background(), c, Name, Version, instance)
	if err != nil {
		return nil, err
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			fmt.Fprintln(os.Stderr, Name+": flush traces:", err)
		}
	}, nil
}
