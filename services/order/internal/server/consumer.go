package server

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
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
// on the process's client mc, inside the services' middleware
// (kit/consume.Consumers); it connects on Start.
func NewConsumer(mc *mqclient.Client, events *service.EventService, faults *fault.Set, reg prometheus.Registerer, l *slog.Logger) (*Consumer, error) {
	cs, err := consume.NewConsumers(mc, reg, faults, l.With("module", "order/consumer"), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	if err != nil {
		return nil, err
	}
	handler, err := events.EventsHandler()
	if err != nil {
		return nil, err
	}
	if err := cs.Subscribe(eventv1.GroupOrder, eventv1.TopicInventoryEvents,
		[]string{eventv1.TagStockReserved, eventv1.TagStockRejected, eventv1.TagStockReleased}, handler, mqclient.WithOrdered()); err != nil {
		return nil, err
	}
	if err := cs.Subscribe(eventv1.GroupOrder, eventv1.TopicPaymentEvents,
		[]string{eventv1.TagPaymentSucceeded, eventv1.TagPaymentRefunded}, handler, mqclient.WithOrdered()); err != nil {
		return nil, err
	}
	if err := cs.Subscribe(eventv1.GroupOrderTimer, eventv1.TopicOrderCancelTimer, nil, events.HandleTimer); err != nil {
		return nil, err
	}
	return &Consumer{cs.Server(eventv1.TopicInventoryEvents, eventv1.TopicPaymentEvents, eventv1.TopicOrderCancelTimer)}, nil
}
