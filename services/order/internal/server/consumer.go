package server

import (
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	mqmetrics "github.com/tidemq/tide/pkg/mqclient/metrics"
	"github.com/tidemq/tide/pkg/mqclient/middleware"
	"github.com/tidemq/tide/pkg/mqclient/tracing"
	"github.com/tidemq/tide/services/kit/consume"
	"github.com/tidemq/tide/services/kit/fault"
	"github.com/tidemq/tide/services/order/internal/service"
)

// Consumer is the order service's consumers as one Kratos server
// (pkg/mqclient/kratosmq):
//
//   - group order-service, ordered per order id: inventory-events and
//     payment-events, through EventService.EventsHandler (idempotent).
//   - group order-timer, concurrent: the delayed cancellations on
//     order-cancel-timer (pkg/mqclient/delay messages). A timer delivered
//     before its time is refused (delay.ErrEarly) and comes back later.
//
// The crash_after_effect fault ends the process after a handler's effect
// committed and before the ack.
//
// On Start it creates the subscribed topics if another service has not
// yet (kit/consume.Server).
type Consumer struct {
	*consume.Server
}

// NewConsumer subscribes the handlers of events (service.EventService),
// on the process's client mc; it connects on Start.
func NewConsumer(mc *mqclient.Client, events *service.EventService, faults *fault.Set, reg prometheus.Registerer, l *slog.Logger) (*Consumer, error) {
	sl := l.With("module", "order/consumer")
	base := []mqclient.Option{mqclient.WithClient(mc)}
	srv := kratosmq.NewServer(kratosmq.WithClientOptions(append(base,
		mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst), mqclient.WithLogger(sl))...), kratosmq.WithLogger(sl))
	m, err := mqmetrics.New(reg)
	if err != nil {
		return nil, err
	}
	handler, err := events.EventsHandler()
	if err != nil {
		return nil, err
	}
	common := func(group string) []mqclient.Option {
		return []mqclient.Option{mqclient.WithMiddleware(middleware.Recover(sl), tracing.Middleware(tracing.Options{}),
			m.Middleware(group), consume.LogOutcome(sl, group), consume.CrashAfterEffect(faults, fault.CrashAfterEffect))}
	}
	expr := func(tags ...string) string { return strings.Join(tags, " || ") }
	opts := append(common(eventv1.GroupOrder), mqclient.WithOrdered())
	if err := srv.Subscribe(eventv1.GroupOrder, eventv1.TopicInventoryEvents,
		expr(eventv1.TagStockReserved, eventv1.TagStockRejected, eventv1.TagStockReleased), handler, opts...); err != nil {
		return nil, err
	}
	if err := srv.Subscribe(eventv1.GroupOrder, eventv1.TopicPaymentEvents,
		expr(eventv1.TagPaymentSucceeded, eventv1.TagPaymentRefunded), handler, opts...); err != nil {
		return nil, err
	}
	if err := srv.Subscribe(eventv1.GroupOrderTimer, eventv1.TopicOrderCancelTimer, "*", events.HandleTimer,
		common(eventv1.GroupOrderTimer)...); err != nil {
		return nil, err
	}
	return &Consumer{consume.NewServer(srv, base, eventv1.TopicInventoryEvents,
		eventv1.TopicPaymentEvents, eventv1.TopicOrderCancelTimer)}, nil
}
