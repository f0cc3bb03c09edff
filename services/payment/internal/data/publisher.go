package data

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// Message properties of payment events. The ordered ones match
// pkg/mqclient/ordered.Stamp.
// TODO(patterns): call ordered.Stamp once pkg/mqclient/ordered is final.
const (
	propOrderKey     = "tideOrderKey"
	propOrderVersion = "tideOrderVersion"
	propPaymentID    = "tidePaymentId"
)

// CheckFunc answers a check-back (biz.PaymentUsecase.CheckEvent).
type CheckFunc func(ctx context.Context, kind biz.EventKind, paymentID string, born time.Time) biz.Decision

// TxPublisher sends payment events as transactional messages with
// mqclient's transaction producer (group messaging.producer_group, so the
// broker's check-backs reach any live payment instance).
//
// TODO(patterns): move to pkg/mqclient/txmsg (Sender bound to the gorm
// transaction, fenced check-back) once its API is final.
type TxPublisher struct {
	p     *mqclient.Producer
	check atomic.Pointer[CheckFunc]
	log   *slog.Logger
}

// NewTxPublisher creates and starts the transaction producer; cleanup
// shuts it down. Check-backs answer UNKNOWN until SetChecker is called.
func NewTxPublisher(c *conf.Messaging, l *slog.Logger) (*TxPublisher, func(), error) {
	tp := &TxPublisher{log: l}
	p, err := mqclient.NewTransactionProducer(tp.checkBack,
		mqclient.WithNameServers(SplitAddrs(c.GetNameServers())...),
		mqclient.WithProducerGroup(c.GetProducerGroup()),
		mqclient.WithLogger(l))
	if err != nil {
		return nil, nil, fmt.Errorf("data: transaction producer: %w", err)
	}
	if err := p.Start(context.Background()); err != nil {
		return nil, nil, fmt.Errorf("data: start transaction producer: %w", err)
	}
	tp.p = p
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			l.Warn("data: producer shutdown", "err", err)
		}
	}, nil
}

// SetChecker implements biz.TxPublisher.
func (tp *TxPublisher) SetChecker(f func(ctx context.Context, kind biz.EventKind, paymentID string, born time.Time) biz.Decision) {
	cf := CheckFunc(f)
	tp.check.Store(&cf)
}

func (tp *TxPublisher) checkBack(ctx context.Context, m *mqclient.MessageExt) mqclient.TransactionState {
	f := tp.check.Load()
	id := m.Properties[propPaymentID]
	if f == nil || id == "" {
		return mqclient.TransactionUnknown
	}
	// TODO(patterns): born is the producer's clock; txmsg's fence removes
	// the dependence on it.
	d := (*f)(ctx, biz.EventKind(m.Tag), id, m.BornTimestamp)
	tp.log.InfoContext(ctx, "transaction check-back", "payment_id", id, "tag", m.Tag, "decision", d)
	switch d {
	case biz.DecideCommit:
		return mqclient.TransactionCommit
	case biz.DecideRollback:
		return mqclient.TransactionRollback
	}
	return mqclient.TransactionUnknown
}

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

// ErrHalfMessage: the half message could not be stored; nothing ran.
var ErrHalfMessage = errors.New("data: half message not stored")

// SendInTransaction implements biz.TxPublisher.
func (tp *TxPublisher) SendInTransaction(ctx context.Context, ev *biz.Event, local func(ctx context.Context) error) error {
	m, err := encodeEvent(ev)
	if err != nil {
		return err
	}
	body, err := eventv1.Marshal(m)
	if err != nil {
		return err
	}
	msg := &mqclient.Message{Topic: eventv1.TopicPaymentEvents, Tag: eventv1.Tag(m), Body: body, ShardingKey: ev.OrderID,
		Keys: []string{ev.OrderID, ev.PaymentID},
		Properties: map[string]string{propOrderKey: ev.OrderID, propOrderVersion: strconv.FormatInt(ev.Seq, 10),
			propPaymentID: ev.PaymentID}}
	ran := false
	var localErr error
	_, state, err := tp.p.SendInTransaction(ctx, msg, func(ctx context.Context) error {
		ran = true
		localErr = local(ctx)
		return localErr
	})
	if !ran {
		return fmt.Errorf("%w: %w", ErrHalfMessage, err)
	}
	if err != nil && localErr == nil {
		// END_TRANSACTION failed after a commit: the check-back commits.
		tp.log.WarnContext(ctx, "end transaction failed; the check-back decides", "payment_id", ev.PaymentID, "state", state, "err", err)
	}
	return localErr
}
