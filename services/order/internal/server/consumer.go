package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/go-kratos/kratos/v2/log"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/order/internal/biz"
	"github.com/tidemq/tide/services/order/internal/conf"
	"github.com/tidemq/tide/services/order/internal/data"
)

// Consumer receives the events that move orders: inventory-events and
// payment-events (group order-service, ordered per order id) and the
// delayed cancellation timers on order-cancel-timer (group order-timer).
// It is a transport.Server. Handlers are idempotent: every applied event
// is recorded in order_timeline in the same transaction as its effect
// (unique order, topic, seq), and a redelivered event is skipped.
//
// TODO(kratosmq): replace with a pkg/mqclient/kratosmq server registered
// by topic and tag, and TODO(idempotent): add the Redis fast path of
// pkg/mqclient/idempotent, once their APIs are final.
type Consumer struct {
	opts   []mqclient.Option
	uc     *biz.OrderUsecase
	log    *log.Helper
	events *mqclient.PushConsumer
	timers *mqclient.PushConsumer
}

// NewConsumer returns the consumer; it connects on Start.
func NewConsumer(c *conf.MQ, uc *biz.OrderUsecase, logger log.Logger) *Consumer {
	addrs := strings.FieldsFunc(c.GetNamesrvAddr(), func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
	return &Consumer{uc: uc, log: log.NewHelper(log.With(logger, "module", "order/consumer")),
		opts: []mqclient.Option{mqclient.WithNameServers(addrs...), mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst),
			mqclient.WithLogger(slog.Default().With("module", "order/consumer"))}}
}

// Start creates the subscribed topics if they do not exist yet (another
// service may not have started), subscribes and starts both consumer
// groups, then returns.
func (c *Consumer) Start(ctx context.Context) error {
	if err := data.EnsureTopics(ctx, c.opts[:1], eventv1.TopicInventoryEvents, eventv1.TopicPaymentEvents,
		eventv1.TopicOrderCancelTimer); err != nil {
		return err
	}
	events, err := mqclient.NewPushConsumer(eventv1.GroupOrder, append(c.opts, mqclient.WithOrdered())...)
	if err != nil {
		return err
	}
	expr := func(tags ...string) string { return strings.Join(tags, " || ") }
	if err := events.Subscribe(eventv1.TopicInventoryEvents,
		expr(eventv1.TagStockReserved, eventv1.TagStockRejected, eventv1.TagStockReleased), c.handle); err != nil {
		return err
	}
	if err := events.Subscribe(eventv1.TopicPaymentEvents,
		expr(eventv1.TagPaymentSucceeded, eventv1.TagPaymentRefunded), c.handle); err != nil {
		return err
	}
	timers, err := mqclient.NewPushConsumer(eventv1.GroupOrderTimer, c.opts...)
	if err != nil {
		return err
	}
	if err := timers.Subscribe(eventv1.TopicOrderCancelTimer, eventv1.TagOrderCancelTimer, c.handle); err != nil {
		return err
	}
	if err := events.Start(ctx); err != nil {
		return fmt.Errorf("consumer %s: %w", eventv1.GroupOrder, err)
	}
	if err := timers.Start(ctx); err != nil {
		events.Shutdown(ctx)
		return fmt.Errorf("consumer %s: %w", eventv1.GroupOrderTimer, err)
	}
	c.events, c.timers = events, timers
	return nil
}

// Stop shuts both consumers down: running handlers finish and offsets are
// committed, bounded by ctx.
func (c *Consumer) Stop(ctx context.Context) error {
	var errs []error
	for _, pc := range []*mqclient.PushConsumer{c.events, c.timers} {
		if pc != nil {
			errs = append(errs, pc.Shutdown(ctx))
		}
	}
	return errors.Join(errs...)
}

// handle decodes one message by its tag and applies it. A body that does
// not decode is dropped with a log line: retrying cannot fix it.
func (c *Consumer) handle(ctx context.Context, m *mqclient.MessageExt) error {
	ev, err := eventv1.Decode(m.Tag, m.Body)
	if err != nil {
		c.log.WithContext(ctx).Errorf("drop message %s on %s: %v", m.MsgID, m.Topic, err)
		return nil
	}
	switch ev := ev.(type) {
	case *eventv1.StockReserved:
		return c.uc.OnStockReserved(ctx, ev)
	case *eventv1.StockRejected:
		return c.uc.OnStockRejected(ctx, ev)
	case *eventv1.StockReleased:
		return c.uc.OnStockReleased(ctx, ev)
	case *eventv1.PaymentSucceeded:
		return c.uc.OnPaymentSucceeded(ctx, ev)
	case *eventv1.PaymentRefunded:
		return c.uc.OnPaymentRefunded(ctx, ev)
	case *eventv1.OrderCancelTimer:
		return c.uc.CancelIfUnpaid(ctx, ev.GetOrderId())
	}
	c.log.WithContext(ctx).Warnf("ignore %s message %s on %s", m.Tag, m.MsgID, m.Topic)
	return nil
}
