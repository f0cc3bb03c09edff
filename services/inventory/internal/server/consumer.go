package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/pkg/mqclient/middleware"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	"github.com/tidemq/tide/services/inventory/internal/data"
	"github.com/tidemq/tide/services/inventory/internal/service"
)

// ConsumerServer consumes order-events in order per order id (an ordered
// push consumer: one message per order at a time, queue locks at the
// broker) and runs the outbox relay that publishes inventory-events. On
// Start it first makes sure both topics exist. It is a Kratos
// transport.Server.
//
// TODO(patterns): wrap the handler with pkg/mqclient/ordered's Guard (per
// order version check on OrderCreated/OrderCancelled/OrderPaid seq) and
// pkg/mqclient/idempotent once their APIs are final; today the reservation
// state machine plus the Redis fast path (biz) make every event apply once.
type ConsumerServer struct {
	mq     *kratosmq.Server
	relay  *data.Outbox
	nsAddr []string
	log    *slog.Logger
}

// NewConsumerServer subscribes the service to order events.
func NewConsumerServer(c *conf.Messaging, s *service.InventoryService, relay *data.Outbox, l *slog.Logger) (*ConsumerServer, error) {
	ns := data.SplitAddrs(c.GetNameServers())
	if len(ns) == 0 {
		return nil, errors.New("server: messaging.name_servers is empty")
	}
	group := c.GetConsumerGroup()
	if group == "" {
		group = eventv1.GroupInventory
	}
	opts := []mqclient.Option{mqclient.WithOrdered(), mqclient.WithMiddleware(middleware.Recover(l))}
	if c.GetDuplicateDelivery() {
		opts = append(opts, mqclient.WithMiddleware(middleware.Duplicate()))
	}
	mq := kratosmq.NewServer(kratosmq.WithClientOptions(mqclient.WithNameServers(ns...), mqclient.WithLogger(l)), kratosmq.WithLogger(l))
	expr := strings.Join([]string{eventv1.TagOrderCreated, eventv1.TagOrderCancelled, eventv1.TagOrderPaid}, " || ")
	if err := mq.Subscribe(group, eventv1.TopicOrderEvents, expr, s.HandleOrderEvent, opts...); err != nil {
		return nil, err
	}
	return &ConsumerServer{mq: mq, relay: relay, nsAddr: ns, log: l}, nil
}

// Start creates the topics if missing, then starts the consumer and the
// relay.
func (s *ConsumerServer) Start(ctx context.Context) error {
	if err := EnsureTopics(ctx, s.nsAddr, eventv1.TopicOrderEvents, eventv1.TopicInventoryEvents); err != nil {
		return err
	}
	if err := s.relay.Start(ctx); err != nil {
		return err
	}
	return s.mq.Start(ctx)
}

// Stop drains the consumer (running handlers finish, offsets commit),
// then stops the relay.
func (s *ConsumerServer) Stop(ctx context.Context) error {
	return errors.Join(s.mq.Stop(ctx), s.relay.Stop(ctx))
}

// EnsureTopics creates topics (8 queues, on every master) that do not
// exist yet and waits until the NameServers route them.
func EnsureTopics(ctx context.Context, nameServers []string, topics ...string) error {
	a, err := mqclient.NewAdmin(mqclient.WithNameServers(nameServers...))
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	defer a.Shutdown(context.WithoutCancel(ctx))
	have, err := a.Topics(ctx)
	if err != nil {
		return fmt.Errorf("server: list topics: %w", err)
	}
	for _, t := range topics {
		found := false
		for _, h := range have {
			found = found || h == t
		}
		if !found {
			if err := a.CreateTopic(ctx, t, mqclient.TopicConfig{Order: true}); err != nil {
				return fmt.Errorf("server: create topic: %w", err)
			}
		}
		if err := a.WaitTopic(ctx, t); err != nil {
			return err
		}
	}
	return nil
}
