package server

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/pkg/mqclient/metrics"
	"github.com/tidemq/tide/pkg/mqclient/middleware"
	"github.com/tidemq/tide/pkg/mqclient/tracing"
	"github.com/tidemq/tide/services/kit/consume"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/fault"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// ConsumerServer consumes OrderCancelled from order-events to refuse and
// refund late payments, as a kratosmq server. On Start it makes sure
// order-events and payment-events exist.
//
// It consumes concurrently, not orderly: it takes one event per order
// (OrderCancelled; redeliveries are deduplicated by order id), so there
// is no order among its messages to keep, and the order's lock row (see
// biz.MarkOrderCancelled) serialises it with the order's payments.
// Orderly consumption would hold broker queue locks; a process that dies
// (a crash, the crash faults) keeps them until the broker expires them
// (60 s after the last renewal, renewed every 20 s), so its restarted
// successor (a new client id) pulled nothing for 40-60 s: late payments
// stayed unrefunded that long (the e2e random-faults scenario saw 25 s
// after the cancellation).
type ConsumerServer struct {
	*consume.Server
}

// NewConsumerServer subscribes the service to order cancellations
// (service.PaymentService.OrderCancelledHandler: idempotent, then refunds
// the order's payment, itself idempotent, then honours the
// crash_after_effect fault before the acknowledgement), on the process's
// client mc.
func NewConsumerServer(c *conf.Messaging, mc *mqclient.Client, s *service.PaymentService, faults *fault.Set,
	reg prometheus.Registerer, mm *metrics.Metrics, l *slog.Logger) (*ConsumerServer, error) {
	group := c.GetConsumerGroup()
	if group == "" {
		group = eventv1.GroupPayment
	}
	h, err := s.OrderCancelledHandler(group, func(attrs ...any) { faults.Crash(fault.CrashAfterEffect, attrs...) }, reg)
	if err != nil {
		return nil, err
	}
	opts := []mqclient.Option{mqclient.WithMiddleware(
		tracing.Middleware(tracing.Options{}), mm.Middleware(group), middleware.Recover(l))}
	if c.GetDuplicateDelivery() {
		opts = append(opts, mqclient.WithMiddleware(middleware.Duplicate()))
	}
	base := []mqclient.Option{mqclient.WithClient(mc)}
	mq := kratosmq.NewServer(kratosmq.WithClientOptions(append(base, mqclient.WithLogger(l))...), kratosmq.WithLogger(l))
	if err := mq.Subscribe(group, eventv1.TopicOrderEvents, eventv1.TagOrderCancelled, h, opts...); err != nil {
		return nil, err
	}
	return &ConsumerServer{consume.NewServer(mq, base, eventv1.TopicOrderEvents, eventv1.TopicPaymentEvents)}, nil
}
