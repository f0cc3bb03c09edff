package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/tidemq/tide/services/kit/topics"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-kratos/kratos/v2/log"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"gorm.io/gorm"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/delay"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	mqmetrics "github.com/tidemq/tide/pkg/mqclient/metrics"
	"github.com/tidemq/tide/pkg/mqclient/middleware"
	"github.com/tidemq/tide/pkg/mqclient/tracing"
	"github.com/tidemq/tide/services/kit/fault"
	"github.com/tidemq/tide/services/order/internal/biz"
	"github.com/tidemq/tide/services/order/internal/conf"
	"github.com/tidemq/tide/services/order/internal/data"
)

// Consumer is the order service's consumers as one Kratos server
// (pkg/mqclient/kratosmq):
//
//   - group order-service, ordered per order id: inventory-events and
//     payment-events. Each handler is wrapped by pkg/mqclient/idempotent
//     (Redis fast path and in-progress claim, key topic/order/seq); the
//     durable dedup record is order_timeline's unique (order_id, topic,
//     seq), written in the transaction of the effect (the order change and,
//     for transitions that publish, its txmsg fence row), so Redis is only
//     ever an optimisation (FailOpen).
//   - group order-timer, concurrent: the delayed cancellations on
//     order-cancel-timer (pkg/mqclient/delay messages). A timer delivered
//     before its time is refused (delay.ErrEarly) and comes back later.
//
// The crash_after_effect fault ends the process after a handler's effect
// committed and before the ack.
type Consumer struct {
	*kratosmq.Server
	uc     *biz.OrderUsecase
	base   []mqclient.Option // NameServers and credentials
	faults *fault.Set
	log    *log.Helper
	// running is set once the consumers started (readiness).
	running atomic.Bool

	timerFired    *prometheus.CounterVec
	timerLateness prometheus.Histogram
}

// NewConsumer subscribes the handlers; it connects on Start.
func NewConsumer(c *conf.MQ, uc *biz.OrderUsecase, d *data.Data, faults *fault.Set, reg prometheus.Registerer, logger log.Logger) (*Consumer, error) {
	sl := slog.Default().With("module", "order/consumer")
	base := data.ClientOptions(c)
	srv := kratosmq.NewServer(kratosmq.WithClientOptions(append(data.ClientOptions(c),
		mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst), mqclient.WithLogger(sl))...), kratosmq.WithLogger(sl))
	cs := &Consumer{Server: srv, uc: uc, base: base, faults: faults, log: log.NewHelper(log.With(logger, "module", "order/consumer")),
		timerFired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tide_order_timer_fired_total",
			Help: "Cancellation timers delivered, by result (handled, early, error)."}, []string{"result"}),
		timerLateness: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tide_order_timer_lateness_seconds",
			Help: "Time from a cancellation's deadline to its timer's handling.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 16)}),
	}
	for _, col := range []prometheus.Collector{cs.timerFired, cs.timerLateness} {
		if err := reg.Register(col); err != nil {
			return nil, err
		}
	}
	m, err := mqmetrics.New(reg)
	if err != nil {
		return nil, err
	}
	idem, err := idempotent.New(nil, d.Redis(), idempotent.Options{Group: eventv1.GroupOrder, Handler: "order-events",
		Key: eventKey, RedisPolicy: idempotent.FailOpen, ClaimTTL: 30 * time.Second, Logger: sl, Registerer: reg})
	if err != nil {
		return nil, err
	}
	common := func(group string) []mqclient.Option {
		return []mqclient.Option{mqclient.WithMiddleware(middleware.Recover(sl), tracing.Middleware(tracing.Options{}),
			m.Middleware(group), logFields(sl, group), cs.crashAfterEffect)}
	}
	handler := idem.Wrap(func(ctx context.Context, _ *gorm.DB, m *mqclient.MessageExt) error { return cs.handle(ctx, m) })
	expr := func(tags ...string) string { return strings.Join(tags, " || ") }
	events := append(common(eventv1.GroupOrder), mqclient.WithOrdered())
	if err := srv.Subscribe(eventv1.GroupOrder, eventv1.TopicInventoryEvents,
		expr(eventv1.TagStockReserved, eventv1.TagStockRejected, eventv1.TagStockReleased), handler, events...); err != nil {
		return nil, err
	}
	if err := srv.Subscribe(eventv1.GroupOrder, eventv1.TopicPaymentEvents,
		expr(eventv1.TagPaymentSucceeded, eventv1.TagPaymentRefunded), handler, events...); err != nil {
		return nil, err
	}
	if err := srv.Subscribe(eventv1.GroupOrderTimer, eventv1.TopicOrderCancelTimer, "*", cs.onTimer,
		common(eventv1.GroupOrderTimer)...); err != nil {
		return nil, err
	}
	return cs, nil
}

// Start creates the subscribed topics if another service has not yet,
// then starts the consumers.
func (c *Consumer) Start(ctx context.Context) error {
	if err := topics.Ensure(ctx, c.base, eventv1.TopicInventoryEvents,
		eventv1.TopicPaymentEvents, eventv1.TopicOrderCancelTimer); err != nil {
		return err
	}
	err := c.Server.Start(ctx)
	if errors.Is(err, kratosmq.ErrStopped) {
		// The app was stopped while this server was starting: not a failure.
		return nil
	}
	if err == nil {
		c.running.Store(true)
	}
	return err
}

// Running reports whether the consumers started and were not stopped.
func (c *Consumer) Running() bool { return c.running.Load() }

// Stop drains the consumers (in-flight handlers finish, offsets commit).
func (c *Consumer) Stop(ctx context.Context) error {
	c.running.Store(false)
	return c.Server.Stop(ctx)
}

// orderEvent is what every event payload has.
type orderEvent interface {
	proto.Message
	GetOrderId() string
	GetSeq() int64
}

// eventKey is the idempotency key of an order event: topic/order/seq,
// the same triple order_timeline's unique key holds.
func eventKey(m *mqclient.MessageExt) (string, error) {
	ev, err := eventv1.Decode(m.Tag, m.Body)
	if err != nil {
		return "", err
	}
	oe, ok := ev.(orderEvent)
	if !ok || oe.GetOrderId() == "" {
		return "", fmt.Errorf("%s message %s has no order id", m.Tag, m.MsgID)
	}
	return fmt.Sprintf("%s/%s/%d", m.Topic, oe.GetOrderId(), oe.GetSeq()), nil
}

// crashAfterEffect is the crash_after_effect fault: the handler returned
// nil (its effect committed); the process ends before the ack.
func (c *Consumer) crashAfterEffect(h mqclient.Handler) mqclient.Handler {
	return func(ctx context.Context, m *mqclient.MessageExt) error {
		err := h(ctx, m)
		if err == nil {
			c.faults.Crash(data.FaultCrashAfterEffect, "topic", m.Topic, "msg_id", m.MsgID, "key", m.Key())
		}
		return err
	}
}

// logFields logs every failed delivery with topic, group, msg id and key
// (the order id).
func logFields(l *slog.Logger, group string) mqclient.Middleware {
	return func(h mqclient.Handler) mqclient.Handler {
		return func(ctx context.Context, m *mqclient.MessageExt) error {
			err := h(ctx, m)
			attrs := []any{"topic", m.Topic, "group", group, "tag", m.Tag, "msg_id", m.MsgID, "order_id", m.Key(),
				"reconsume", m.ReconsumeTimes}
			if err != nil {
				l.WarnContext(ctx, "handler failed, will retry", append(attrs, "err", err)...)
			} else {
				l.DebugContext(ctx, "handled", attrs...)
			}
			return err
		}
	}
}

// handle decodes one event by its tag and applies it.
func (c *Consumer) handle(ctx context.Context, m *mqclient.MessageExt) error {
	ev, err := eventv1.Decode(m.Tag, m.Body)
	if err != nil {
		// eventKey already failed on it; unreachable.
		return err
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
	}
	c.log.WithContext(ctx).Warnf("ignore %s message %s on %s", m.Tag, m.MsgID, m.Topic)
	return nil
}

// onTimer fires a cancellation timer: refused before its time (the
// broker's timer or a broker without timers delivering early), else
// CancelIfUnpaid, which cancels only a still-unpaid order, in one
// transaction with OrderCancelled.
func (c *Consumer) onTimer(ctx context.Context, m *mqclient.MessageExt) error {
	id := m.Properties[delay.PropKey]
	if id == "" {
		// Timers scheduled before the delay package carried only the body.
		if ev, err := eventv1.Decode(eventv1.TagOrderCancelTimer, m.Body); err == nil {
			id = ev.(*eventv1.OrderCancelTimer).GetOrderId()
		}
	}
	if id == "" {
		c.log.WithContext(ctx).Errorf("drop timer message %s: no order id", m.MsgID)
		return nil
	}
	if ms, perr := strconv.ParseInt(m.Properties[delay.PropAt], 10, 64); perr == nil {
		at := time.UnixMilli(ms)
		if now := time.Now(); now.Before(at) {
			// Never early: a broker that delivers timers at once (no timer
			// support) or a skewed clock; redelivered through retry.
			c.timerFired.WithLabelValues("early").Inc()
			return fmt.Errorf("%w: order %s due at %s", delay.ErrEarly, id, at.Format(time.RFC3339Nano))
		}
		c.timerLateness.Observe(time.Since(at).Seconds())
	}
	err := c.uc.CancelIfUnpaid(ctx, id)
	switch {
	case errors.Is(err, biz.ErrTooEarly):
		c.timerFired.WithLabelValues("early").Inc()
		return fmt.Errorf("%w: %w", delay.ErrEarly, err)
	case err != nil:
		c.timerFired.WithLabelValues("error").Inc()
		return err
	}
	c.timerFired.WithLabelValues("handled").Inc()
	return nil
}
