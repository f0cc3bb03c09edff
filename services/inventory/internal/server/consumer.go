package server

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/service"
	"github.com/tidemq/tide/services/kit/consume"
	"github.com/tidemq/tide/services/kit/fault"
)

// ConsumerServer is the inventory service's messaging, as one Kratos
// server: the ordered consumer of order-events (pkg/mqclient/kratosmq)
// and the outbox relay that publishes inventory-events. On Start it first
// makes sure both topics exist.
//
// Each order event goes through, outermost first (2 to 4 are
// service.InventoryService.OrderEventsHandler with data.NewDedup):
//
//  1. crash_after_effect (fault): exit after the effect committed, before
//     the ack;
//  2. pkg/mqclient/idempotent: Redis fast path ("done" marker, in-progress
//     claim) and, as the first statement of the transaction, the dedup
//     record (group inventory-service, handler order-events, key
//     "<order id>/<version>"): a duplicate (a redelivery, or deliver_twice's
//     second message) is acknowledged without effect;
//  3. pkg/mqclient/ordered's Guard (Lenient), in the same transaction: the
//     event's version must follow the order's last applied one; an older
//     version is stale and dropped (the reservation's state machine has a
//     tombstone for "cancelled before reserved"), a gap is applied and
//     recorded;
//  4. the stock command (Reserve/Release/Sell), its outbox row, all in the
//     same transaction.
type ConsumerServer struct {
	*consume.Server
}

// NewConsumerServer subscribes the service to order events
// (service.InventoryService.OrderEventsHandler), on the process's client
// mc, inside the services' middleware (kit/consume.Consumers), and runs
// relay beside the consumer.
func NewConsumerServer(c *conf.Messaging, mc *mqclient.Client, s *service.InventoryService, relay service.Relay, faults *fault.Set,
	reg prometheus.Registerer, l *slog.Logger) (*ConsumerServer, error) {
	group := c.GetConsumerGroup()
	if group == "" {
		group = eventv1.GroupInventory
	}
	handler, err := s.OrderEventsHandler(group, reg)
	if err != nil {
		return nil, err
	}
	consumers, err := consume.NewConsumers(mc, reg, faults, l.With("module", "inventory/consumer"), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	if err != nil {
		return nil, err
	}
	tags := []string{eventv1.TagOrderCreated, eventv1.TagOrderCancelled, eventv1.TagOrderPaid}
	if err := consumers.Subscribe(group, eventv1.TopicOrderEvents, tags, handler, mqclient.WithOrdered()); err != nil {
		return nil, err
	}
	cs := consumers.Server(eventv1.TopicOrderEvents, eventv1.TopicInventoryEvents)
	cs.Before, cs.After = relay.Start, relay.Stop
	return &ConsumerServer{cs}, nil
}
