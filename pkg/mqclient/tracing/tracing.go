// Package tracing carries OpenTelemetry trace context through message
// properties: a producer SendInterceptor injects the context of the send
// call, and a consumer Middleware extracts it and runs the handler inside a
// consumer span that continues the producer's trace.
package tracing

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemq/tide/pkg/mqclient"
)

const scope = "github.com/tidemq/tide/pkg/mqclient/tracing"

// carrier adapts message properties to propagation.TextMapCarrier.
type carrier map[string]string

func (c carrier) Get(k string) string { return c[k] }
func (c carrier) Set(k, v string)     { c[k] = v }
func (c carrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// Options select the propagator and tracer provider; zero values use the
// global ones (otel.GetTextMapPropagator, otel.GetTracerProvider).
type Options struct {
	Propagator     propagation.TextMapPropagator
	TracerProvider trace.TracerProvider
}

func (o Options) prop() propagation.TextMapPropagator {
	if o.Propagator != nil {
		return o.Propagator
	}
	return otel.GetTextMapPropagator()
}

func (o Options) tracer() trace.Tracer {
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(scope)
}

// SendInterceptor injects the trace context of each send's ctx into the
// message's properties (for example "traceparent").
func SendInterceptor(o Options) mqclient.SendInterceptor { return inject{o} }

type inject struct{ o Options }

func (i inject) BeforeSend(ctx context.Context, m *mqclient.Message) error {
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	i.o.prop().Inject(ctx, carrier(m.Properties))
	return nil
}

func (inject) AfterSend(context.Context, *mqclient.Message, *mqclient.SendResult, error) {}

// Middleware extracts the trace context from each message's properties
// and runs the handler in a consumer span named "<topic> process".
func Middleware(o Options) mqclient.Middleware {
	return func(h mqclient.Handler) mqclient.Handler {
		return func(ctx context.Context, m *mqclient.MessageExt) error {
			ctx = o.prop().Extract(ctx, carrier(m.Properties))
			ctx, span := o.tracer().Start(ctx, m.Topic+" process", trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					attribute.String("messaging.system", "rocketmq"),
					attribute.String("messaging.destination.name", m.Topic),
					attribute.String("messaging.message.id", m.MsgID),
					attribute.Int("messaging.rocketmq.message.reconsume_times", int(m.ReconsumeTimes)),
				))
			defer span.End()
			err := h(ctx, m)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return err
		}
	}
}
