package mq

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Member is a producer or pattern that runs on the process's client and
// starts and shuts down with a context (mqclient.Producer, txmsg.Sender).
type Member interface {
	Start(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// Start starts m, named what in the error it returns when m does not
// start, and returns the wire cleanup that shuts m down, waiting up to stop
// and logging a failure to l at WARN ("shutdown <what>"): what every data
// layer does with the producer or sender it builds on the client.
func Start(ctx context.Context, m Member, what string, stop time.Duration, l *slog.Logger) (func(), error) {
	if err := m.Start(ctx); err != nil {
		return nil, fmt.Errorf("data: start %s: %w", what, err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), stop)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			l.Warn("shutdown "+what, "err", err)
		}
	}, nil
}

// ProducerSpan starts the producer span of sending a message to topic,
// with the tracer of scope (the sending package's import path): name
// "<topic> send", kind producer, messaging.system "rocketmq",
// messaging.destination.name topic, and attrs. The message sent with the
// returned context carries the span's context (tracing.SendInterceptor on
// the producer), so consumer spans are its children. Record the outcome
// with Sent and end the span.
func ProducerSpan(ctx context.Context, scope, topic string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return otel.Tracer(scope).Start(ctx, topic+" send", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(append([]attribute.KeyValue{attribute.String("messaging.system", "rocketmq"),
			attribute.String("messaging.destination.name", topic)}, attrs...)...))
}

// Sent records a send's outcome on its producer span: err with status
// Error, or else the message id (messaging.message.id) of res.
func Sent(span trace.Span, res *mqclient.SendResult, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return
	}
	span.SetAttributes(attribute.String("messaging.message.id", res.MsgID))
}
