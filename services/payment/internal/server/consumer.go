package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/pkg/mqclient/middleware"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/data"
	"github.com/tidemq/tide/services/payment/internal/service"
)

// ConsumerServer consumes OrderCancelled from order-events (ordered per
// order id) to refund late payments. On Start it makes sure order-events
// and payment-events exist. It is a Kratos transport.Server.
//
// TODO(patterns): wrap the handler with pkg/mqclient/idempotent once its
// API is final; today the cancelled_orders row and the payment's
// conditional SUCCEEDED→REFUNDED update (plus the Redis fast path in biz)
// make the refund happen once.
type ConsumerServer struct {
	mq     *kratosmq.Server
	nsAddr []string
}

// NewConsumerServer subscribes the service to order cancellations.
func NewConsumerServer(c *conf.Messaging, s *service.PaymentService, l *slog.Logger) (*ConsumerServer, error) {
	ns := data.SplitAddrs(c.GetNameServers())
	if len(ns) == 0 {
		return nil, errors.New("server: messaging.name_servers is empty")
	}
	group := c.GetConsumerGroup()
	if group == "" {
		group = eventv1.GroupPayment
	}
	opts := []mqclient.Option{mqclient.WithOrdered(), mqclient.WithMiddleware(middleware.Recover(l))}
	if c.GetDuplicateDelivery() {
		opts = append(opts, mqclient.WithMiddleware(middleware.Duplicate()))
	}
	mq := kratosmq.NewServer(kratosmq.WithClientOptions(mqclient.WithNameServers(ns...), mqclient.WithLogger(l)), kratosmq.WithLogger(l))
	if err := mq.Subscribe(group, eventv1.TopicOrderEvents, eventv1.TagOrderCancelled, s.HandleOrderEvent, opts...); err != nil {
		return nil, err
	}
	return &ConsumerServer{mq: mq, nsAddr: ns}, nil
}

// Start creates the topics if missing, then starts the consumer.
func (s *ConsumerServer) Start(ctx context.Context) error {
	if err := EnsureTopics(ctx, s.nsAddr, eventv1.TopicOrderEvents, eventv1.TopicPaymentEvents); err != nil {
		return err
	}
	return s.mq.Start(ctx)
}

// Stop drains the consumer (running handlers finish, offsets commit).
func (s *ConsumerServer) Stop(ctx context.Context) error { return s.mq.Stop(ctx) }

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
