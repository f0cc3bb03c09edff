package data

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"gorm.io/gorm"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/services/kit/fault"
	"github.com/tidemq/tide/services/kit/mq"
	"github.com/tidemq/tide/services/order/internal/biz"
	"github.com/tidemq/tide/services/order/internal/conf"
)

// Fault switch names of the order service (contract.md).
const (
	FaultCrashAfterCommit = fault.CrashAfterCommit
	FaultCrashAfterEffect = fault.CrashAfterEffect
	FaultDeliverTwice     = fault.DeliverTwice
)

// NewFaults returns the service's fault switches, with those the config
// enables armed for every shot.
func NewFaults(c *conf.Fault, l *slog.Logger) *fault.Set {
	s := fault.New(c.GetAdmin(), l.With("module", "order/fault"),
		FaultCrashAfterCommit, FaultCrashAfterEffect, FaultDeliverTwice)
	for name, on := range map[string]bool{FaultCrashAfterCommit: c.GetCrashAfterCommit(),
		FaultCrashAfterEffect: c.GetCrashAfterEffect(), FaultDeliverTwice: c.GetDeliverTwice()} {
		if on {
			_ = s.Arm(name, 0, 0) // names are known
		}
	}
	return s
}

// NewMQClient returns the process's one mqclient.Client (kit/mq): the
// NameServers and, when mq.access_key is set, the plain-ACL credentials
// that sign every request; with MQ_INSTANCE_NAME set (boot.InstanceName),
// a client id that stays the same across restarts. The sender, the timer
// scheduler's admin and the consumers all run on it. cleanup releases it
// after they shut down.
func NewMQClient(c *conf.MQ, l *slog.Logger) (*mqclient.Client, func(), error) {
	return mq.NewClient(c.GetNamesrvAddr(), c.GetAccessKey(), c.GetSecretKey(), l.With("module", "order/mq"))
}

// NewSender creates the order topics if missing and starts the
// transactional sender of order events (kit/mq.NewSender, group
// mq.producer_group) on the process's client mc: every event is a half
// message whose local transaction writes the order change and the fence
// row; check-backs read the fence (tide_tx_fence). Its after-commit crash
// point is the crash_after_commit fault. cleanup shuts it down.
func NewSender(c *conf.MQ, mc *mqclient.Client, d *Data, faults *fault.Set, reg prometheus.Registerer, l *slog.Logger) (*txmsg.Sender, func(), error) {
	o := mq.SenderOptions{Group: cmp.Or(c.GetProducerGroup(), eventv1.GroupOrderProducer),
		Topics: []string{eventv1.TopicOrderEvents, eventv1.TopicOrderCancelTimer},
		AfterCommit: func() {
			faults.Crash(FaultCrashAfterCommit, "point", "after local commit, before END_TRANSACTION")
		},
		Producer: []mqclient.Option{mqclient.WithLogger(l.With("module", "order/mq"))},
		Stop:     10 * time.Second, Logger: l.With("module", "order/txmsg"), Registerer: reg}
	if t := c.GetSendTimeout().AsDuration(); t > 0 {
		o.Producer = append(o.Producer, mqclient.WithSendTimeout(t))
	}
	return mq.NewSender(d.db, mc, o)
}

type eventPublisher struct {
	data   *Data
	s      *txmsg.Sender
	faults *fault.Set
	log    *slog.Logger
}

// NewEventPublisher returns the biz.EventPublisher: each event is a
// transactional message on order-events (txmsg), stamped by
// ordered.Stamp with the order id as sharding key, message key and
// ordering key and the order's event sequence as version, so consumers
// apply an order's events in sequence with an ordered.Guard. Its
// transaction key is "order/<id>/<seq>": one per event.
func NewEventPublisher(d *Data, s *txmsg.Sender, faults *fault.Set, l *slog.Logger) biz.EventPublisher {
	return &eventPublisher{data: d, s: s, faults: faults, log: l.With("module", "order/publisher")}
}

// tracerScope names the tracer of the publisher's producer spans.
const tracerScope = "github.com/tidemq/tide/services/order/internal/data"

// TxKey is the txmsg key of an order event.
func TxKey(orderID string, seq int64) string { return fmt.Sprintf("order/%s/%d", orderID, seq) }

func (e *eventPublisher) PublishInTx(ctx context.Context, ev biz.Event, fn func(ctx context.Context) error) error {
	body, err := eventv1.Marshal(ev.Payload)
	if err != nil {
		return err
	}
	msg := ordered.Stamp(&mqclient.Message{Topic: eventv1.TopicOrderEvents, Tag: eventv1.Tag(ev.Payload), Body: body},
		ev.OrderID, ev.Seq)
	key := TxKey(ev.OrderID, ev.Seq)
	// A producer span around the send (kit/mq): consumer spans are its
	// children.
	ctx, span := mq.ProducerSpan(ctx, tracerScope, msg.Topic, attribute.String("order.id", ev.OrderID))
	defer span.End()
	res, err := e.s.Send(ctx, msg, key, func(tx *gorm.DB) error {
		return fn(context.WithValue(ctx, txKey{}, tx))
	})
	mq.Sent(span, res, err)
	if err != nil {
		return err
	}
	e.log.InfoContext(ctx, "order event committed", "topic", msg.Topic, "tag", msg.Tag,
		"order_id", ev.OrderID, "seq", ev.Seq, "msg_id", res.MsgID)
	if e.faults.Fire(FaultDeliverTwice) {
		// A real second delivery: a new message (new msg id) with the same
		// key, version and body, as a producer retry would make.
		dup := *msg
		res2, err := e.s.Producer().Send(ctx, &dup)
		if err != nil {
			e.log.WarnContext(ctx, "deliver_twice: second send failed", "order_id", ev.OrderID, "err", err)
		} else {
			e.log.WarnContext(ctx, "deliver_twice: event sent again", "order_id", ev.OrderID, "seq", ev.Seq,
				"msg_id", res2.MsgID)
		}
	}
	return nil
}
