package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/delay"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/services/kit/consume"
	"github.com/tidemq/tide/services/order/internal/biz"
)

// EventService handles the messages the order service consumes, as the
// HTTP and gRPC handlers handle requests: inventory and payment events
// (HandleEvent) and the delayed cancellation timers (HandleTimer). The
// server subscribes them; it is safe for concurrent use.
type EventService struct {
	uc    *biz.OrderUsecase
	dedup consume.Dedup
	reg   prometheus.Registerer
	log   *slog.Logger

	timerFired    *prometheus.CounterVec
	timerLateness prometheus.Histogram
}

// NewEventService returns the handlers; dedup makes the events' handler
// idempotent (EventsHandler). Their metrics (the timers'
// tide_order_timer_fired_total and tide_order_timer_lateness_seconds,
// the dedup's) go to reg.
func NewEventService(uc *biz.OrderUsecase, dedup consume.Dedup, reg prometheus.Registerer, l *slog.Logger) (*EventService, error) {
	s := &EventService{uc: uc, dedup: dedup, reg: reg, log: l.With("module", "order/consumer"),
		timerFired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tide_order_timer_fired_total",
			Help: "Cancellation timers delivered, by result (handled, early, error)."}, []string{"result"}),
		timerLateness: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tide_order_timer_lateness_seconds",
			Help: "Time from a cancellation's deadline to its timer's handling.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 16)}),
	}
	for _, col := range []prometheus.Collector{s.timerFired, s.timerLateness} {
		if err := reg.Register(col); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// EventsHandler returns the handler of inventory-events and
// payment-events: HandleEvent made idempotent by the dedup (Redis fast
// path and in-progress claim, key EventKey). Redis is only ever an
// optimisation (FailOpen): the durable dedup record is order_timeline's
// unique (order_id, topic, seq), written in the transaction of the effect
// (the order change and, for transitions that publish, its txmsg fence
// row).
func (s *EventService) EventsHandler() (mqclient.Handler, error) {
	return s.dedup.Wrap(idempotent.Options{Group: eventv1.GroupOrder, Handler: "order-events", Key: EventKey,
		RedisPolicy: idempotent.FailOpen, ClaimTTL: 30 * time.Second, Logger: s.log, Registerer: s.reg}, s.HandleEvent)
}

// orderEvent is what every event payload has.
type orderEvent interface {
	proto.Message
	GetOrderId() string
	GetSeq() int64
}

// EventKey is the idempotency key of an order event: topic/order/seq,
// the same triple order_timeline's unique key holds.
func EventKey(m *mqclient.MessageExt) (string, error) {
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

// HandleEvent decodes one inventory or payment event by its tag and
// applies it; other tags are logged and acknowledged.
func (s *EventService) HandleEvent(ctx context.Context, m *mqclient.MessageExt) error {
	ev, err := eventv1.Decode(m.Tag, m.Body)
	if err != nil {
		// EventKey already failed on it; unreachable.
		return err
	}
	switch ev := ev.(type) {
	case *eventv1.StockReserved:
		return s.uc.OnStockReserved(ctx, ev)
	case *eventv1.StockRejected:
		return s.uc.OnStockRejected(ctx, ev)
	case *eventv1.StockReleased:
		return s.uc.OnStockReleased(ctx, ev)
	case *eventv1.PaymentSucceeded:
		return s.uc.OnPaymentSucceeded(ctx, ev)
	case *eventv1.PaymentRefunded:
		return s.uc.OnPaymentRefunded(ctx, ev)
	}
	s.log.WarnContext(ctx, fmt.Sprintf("ignore %s message %s on %s", m.Tag, m.MsgID, m.Topic))
	return nil
}

// HandleTimer fires a cancellation timer: refused before its time (the
// broker's timer or a broker without timers delivering early), else
// CancelIfUnpaid, which cancels only a still-unpaid order, in one
// transaction with OrderCancelled.
func (s *EventService) HandleTimer(ctx context.Context, m *mqclient.MessageExt) error {
	id := m.Properties[delay.PropKey]
	if id == "" {
		// Timers scheduled before the delay package carried only the body.
		if ev, err := eventv1.Decode(eventv1.TagOrderCancelTimer, m.Body); err == nil {
			id = ev.(*eventv1.OrderCancelTimer).GetOrderId()
		}
	}
	if id == "" {
		s.log.ErrorContext(ctx, fmt.Sprintf("drop timer message %s: no order id", m.MsgID))
		return nil
	}
	if ms, perr := strconv.ParseInt(m.Properties[delay.PropAt], 10, 64); perr == nil {
		at := time.UnixMilli(ms)
		if now := time.Now(); now.Before(at) {
			// Never early: a broker that delivers timers at once (no timer
			// support) or a skewed clock; redelivered through retry.
			s.timerFired.WithLabelValues("early").Inc()
			return fmt.Errorf("%w: order %s due at %s", delay.ErrEarly, id, at.Format(time.RFC3339Nano))
		}
		s.timerLateness.Observe(time.Since(at).Seconds())
	}
	err := s.uc.CancelIfUnpaid(ctx, id)
	switch {
	case errors.Is(err, biz.ErrTooEarly):
		s.timerFired.WithLabelValues("early").Inc()
		return fmt.Errorf("%w: %w", delay.ErrEarly, err)
	case err != nil:
		s.timerFired.WithLabelValues("error").Inc()
		return err
	}
	s.timerFired.WithLabelValues("handled").Inc()
	return nil
}

// SweepOverdue cancels up to limit live orders past their deadline (the
// backstop of lost timers) and returns how many it cancelled.
func (s *EventService) SweepOverdue(ctx context.Context, limit int) (int, error) {
	return s.uc.SweepOverdue(ctx, limit)
}
