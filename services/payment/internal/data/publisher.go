package data

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"gorm.io/gorm"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/metrics"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/services/kit/mq"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/fault"
)

// Publisher sends payment events to payment-events (ordered by order id,
// keys = order id and payment id): transactional ones through a
// txmsg.Sender (producer group messaging.producer_group, so check-backs
// reach any live payment instance and are answered from the fence
// table), plain ones (re-emissions) through its producer. Safe for
// concurrent use.
type Publisher struct {
	s      *txmsg.Sender
	faults *fault.Set
	log    *slog.Logger
}

// NewPublisher creates and starts the txmsg Sender on d's database (the
// fence table comes from the migrations) and the process's client mc. Its
// crash points honour the crash_after_commit fault. cleanup shuts it
// down.
func NewPublisher(c *conf.Messaging, mc *mqclient.Client, d *Data, faults *fault.Set, reg prometheus.Registerer, mm *metrics.Metrics, l *slog.Logger) (*Publisher, func(), error) {
	o := mq.SenderOptions{Group: cmp.Or(c.GetProducerGroup(), eventv1.GroupPaymentProducer),
		Topics: []string{eventv1.TopicPaymentEvents}, Ensure: []string{eventv1.TopicOrderEvents},
		AfterCommit: func() { faults.Crash(fault.CrashAfterCommit, "point", "after-commit") },
		Producer:    []mqclient.Option{mqclient.WithSendInterceptors(mm.SendInterceptor())},
		Stop:        5 * time.Second, Logger: l, Registerer: reg}
	if d := c.GetCheckTimeout().AsDuration(); d > 0 {
		o.Sender = append(o.Sender, txmsg.WithCheckTimeout(d))
	}
	s, cleanup, err := mq.NewSender(d.Gorm(), mc, o)
	if err != nil {
		return nil, nil, err
	}
	return &Publisher{s: s, faults: faults, log: l}, cleanup, nil
}

// Sender returns the txmsg Sender (tests drive its check-back).
func (p *Publisher) Sender() *txmsg.Sender { return p.s }

func encodeEvent(ev *biz.Event) (proto.Message, error) {
	at := timestamppb.New(ev.At)
	switch ev.Kind {
	case biz.EventPaymentSucceeded:
		return &eventv1.PaymentSucceeded{OrderId: ev.OrderID, Seq: ev.Seq, PaymentId: ev.PaymentID, UserId: ev.UserID, Amount: ev.Amount, PaidAt: at}, nil
	case biz.EventPaymentRefunded:
		return &eventv1.PaymentRefunded{OrderId: ev.OrderID, Seq: ev.Seq, PaymentId: ev.PaymentID, Amount: ev.Amount, Reason: ev.Reason, RefundedAt: at}, nil
	}
	return nil, fmt.Errorf("data: unknown event kind %q", ev.Kind)
}

// Message builds ev's message: tag = event type, ShardingKey = order id
// with the event's version (ordered.Stamp), Keys = order id, payment id.
func Message(ev *biz.Event) (*mqclient.Message, error) {
	m, err := encodeEvent(ev)
	if err != nil {
		return nil, err
	}
	body, err := eventv1.Marshal(m)
	if err != nil {
		return nil, err
	}
	msg := &mqclient.Message{Topic: eventv1.TopicPaymentEvents, Tag: eventv1.Tag(m), Body: body,
		Keys: []string{ev.OrderID, ev.PaymentID}}
	return ordered.Stamp(msg, ev.OrderID, ev.Seq), nil
}

// txKeyFor is the txmsg key of one attempt: the event and payment, plus a
// random suffix, because a key fenced by a check-back (the process died
// before its transaction) can never commit again, and the retry of the
// same request must be able to.
func txKeyFor(ev *biz.Event) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return string(ev.Kind) + ":" + ev.PaymentID + ":" + hex.EncodeToString(b[:]), nil
}

// tracerScope names the tracer of the publisher's producer spans.
const tracerScope = "github.com/tidemq/tide/services/payment/internal/data"

// Publish implements biz.Publisher with txmsg.Sender.Send.
func (p *Publisher) Publish(ctx context.Context, ev *biz.Event, local func(ctx context.Context) error) error {
	msg, err := Message(ev)
	if err != nil {
		return err
	}
	key, err := txKeyFor(ev)
	if err != nil {
		return err
	}
	log := p.log.With("topic", msg.Topic, "tag", msg.Tag, "order_id", ev.OrderID, "payment_id", ev.PaymentID, "tx_key", key)
	// A producer span around the send (kit/mq): consumer spans are its
	// children.
	ctx, span := mq.ProducerSpan(ctx, tracerScope, msg.Topic, attribute.String("order.id", ev.OrderID))
	defer span.End()
	res, err := p.s.Send(ctx, msg, key, func(tx *gorm.DB) error { return local(WithTx(ctx, tx)) })
	mq.Sent(span, res, err)
	switch {
	case err == nil:
		log.InfoContext(ctx, "event committed", "msg_id", res.MsgID)
		p.twice(ctx, msg, log)
		return nil
	case res == nil:
		log.WarnContext(ctx, "half message not stored", "err", err)
		return biz.ErrUnavailable.WithCause(err)
	case errors.Is(err, mqclient.ErrTransactionUnknown):
		return biz.ErrCommitUnknown.WithCause(err)
	case errors.Is(err, txmsg.ErrFenced), errors.Is(err, txmsg.ErrKeyCommitted):
		return biz.ErrUnavailable.WithCause(err)
	}
	return err // local's error: rolled back, message discarded
}

// twice sends the deliver_twice fault's second copy.
func (p *Publisher) twice(ctx context.Context, msg *mqclient.Message, log *slog.Logger) {
	if !p.faults.Fire(fault.DeliverTwice) {
		return
	}
	res, err := p.s.Producer().Send(context.WithoutCancel(ctx), msg)
	if err != nil {
		log.WarnContext(ctx, "FAULT deliver_twice: second copy failed", "err", err)
		return
	}
	log.WarnContext(ctx, "FAULT deliver_twice: second copy sent", "msg_id", res.MsgID)
}

// Emit implements biz.Publisher: a plain send with the event's keys.
func (p *Publisher) Emit(ctx context.Context, ev *biz.Event) error {
	msg, err := Message(ev)
	if err != nil {
		return err
	}
	res, err := p.s.Producer().Send(ctx, msg)
	if err != nil {
		return fmt.Errorf("data: emit %s %s: %w", ev.Kind, ev.OrderID, err)
	}
	log := p.log.With("topic", msg.Topic, "tag", msg.Tag, "order_id", ev.OrderID, "payment_id", ev.PaymentID)
	log.InfoContext(ctx, "event re-emitted", "msg_id", res.MsgID)
	p.twice(ctx, msg, log)
	return nil
}
