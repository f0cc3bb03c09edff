package service

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/go-kratos/kratos/v2/transport"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/middleware"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/kit/consume"
	"github.com/tidemq/tide/services/payment/internal/biz"
)

// IdempotencyHeader carries the idempotency key (HTTP header, gRPC
// metadata "idempotency-key").
const IdempotencyHeader = "Idempotency-Key"

// PaymentService serves the Payment API and handles order events.
type PaymentService struct {
	v1.UnimplementedPaymentServer

	uc    *biz.PaymentUsecase
	dedup consume.Dedup
	log   *slog.Logger
}

// NewPaymentService returns the service; dedup makes the OrderCancelled
// handler idempotent (OrderCancelledHandler).
func NewPaymentService(uc *biz.PaymentUsecase, dedup consume.Dedup, l *slog.Logger) *PaymentService {
	return &PaymentService{uc: uc, dedup: dedup, log: l}
}

// statuses maps a payment's status to the API's PaymentStatus
// (UNSPECIFIED: none).
var statuses = api.NewEnum(map[biz.Status]v1.PaymentStatus{
	biz.StatusSucceeded: v1.PaymentStatus_PAYMENT_STATUS_SUCCEEDED,
	biz.StatusRefunded:  v1.PaymentStatus_PAYMENT_STATUS_REFUNDED,
})

func info(p *biz.Payment) *v1.PaymentInfo {
	return &v1.PaymentInfo{Id: p.ID, OrderId: p.OrderID, UserId: p.UserID, Amount: p.Amount, Status: statuses.API(p.Status),
		IdempotencyKey: p.IdempotencyKey, Reason: p.Reason, CreatedAt: timestamppb.New(p.CreatedAt), UpdatedAt: timestamppb.New(p.UpdatedAt)}
}

// CreatePayment debits the account once per idempotency key. The key
// comes from the Idempotency-Key header (HTTP) or metadata (gRPC), which
// win over the body field.
func (s *PaymentService) CreatePayment(ctx context.Context, req *v1.CreatePaymentRequest) (*v1.CreatePaymentReply, error) {
	key := req.GetIdempotencyKey()
	if tr, ok := transport.FromServerContext(ctx); ok {
		if h := tr.RequestHeader().Get(IdempotencyHeader); h != "" {
			key = h
			if len(h) > MaxIdempotencyKey {
				return nil, api.Invalid(IdempotencyHeader, "must be at most %d bytes, got %d", MaxIdempotencyKey, len(h))
			}
		}
	}
	p, err := s.uc.CreatePayment(ctx, &biz.CreateRequest{OrderID: req.GetOrderId(), UserID: req.GetUserId(), Amount: req.GetAmount(), IdempotencyKey: key})
	if err != nil {
		return nil, err
	}
	return &v1.CreatePaymentReply{Payment: info(p)}, nil
}

// GetPayment returns one payment with its current status.
func (s *PaymentService) GetPayment(ctx context.Context, req *v1.GetPaymentRequest) (*v1.GetPaymentReply, error) {
	p, err := s.uc.GetPayment(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return &v1.GetPaymentReply{Payment: info(p)}, nil
}

// OrderCancelled decodes an order-events message; ok is false for other
// tags (acknowledged without effect).
func OrderCancelled(m *mqclient.MessageExt) (ev *eventv1.OrderCancelled, ok bool, err error) {
	if m.Tag != eventv1.TagOrderCancelled {
		return nil, false, nil
	}
	ev = &eventv1.OrderCancelled{}
	if err := eventv1.Unmarshal(m.Body, ev); err != nil {
		return nil, true, fmt.Errorf("payment: message %s: %w", m.MsgID, err)
	}
	if ev.GetOrderId() == "" {
		return nil, true, fmt.Errorf("payment: message %s: OrderCancelled without order id", m.MsgID)
	}
	return ev, true, nil
}

// MarkCancelled is the idempotent consumer's effect for OrderCancelled:
// it records the cancellation in the transaction carried by ctx (with the
// dedup record), so later payments for the order are refused.
func (s *PaymentService) MarkCancelled(ctx context.Context, ev *eventv1.OrderCancelled) error {
	return s.uc.MarkOrderCancelled(ctx, ev.GetOrderId(), ev.GetReason())
}

// RefundCancelled refunds the cancelled order's payment, if any, once.
// It runs after MarkCancelled committed, on every delivery (a crash
// between the two is repaired by the redelivery; the refund itself is
// idempotent).
func (s *PaymentService) RefundCancelled(ctx context.Context, ev *eventv1.OrderCancelled) error {
	refunded, err := s.uc.RefundOrder(ctx, ev.GetOrderId(), "order_cancelled")
	if err != nil {
		return fmt.Errorf("payment: refund cancelled order %s: %w", ev.GetOrderId(), err)
	}
	if refunded {
		s.log.InfoContext(ctx, "late payment refunded", "order_id", ev.GetOrderId())
	}
	return nil
}

// CancelledOrderID is the idempotency key (and payload) of an
// OrderCancelled message: the order id, the whole business fact (a
// resent cancellation, with a new msg id and timestamp, is the same
// event).
func CancelledOrderID(m *mqclient.MessageExt) (string, error) {
	ev, _, err := OrderCancelled(m)
	if err != nil {
		return "", err
	}
	if ev == nil {
		return "", fmt.Errorf("not OrderCancelled")
	}
	return ev.GetOrderId(), nil
}

// MarkCancelledMessage is MarkCancelled of the message's event.
func (s *PaymentService) MarkCancelledMessage(ctx context.Context, m *mqclient.MessageExt) error {
	ev, _, err := OrderCancelled(m)
	if err != nil {
		return err
	}
	return s.MarkCancelled(ctx, ev)
}

// HandlerOrderCancelled names the OrderCancelled handler's dedup records.
const HandlerOrderCancelled = "order-cancelled"

// OrderCancelledHandler returns the mqclient.Handler of OrderCancelled
// for group: HandleOrderCancelled, its mark (MarkCancelledMessage) made
// idempotent by the dedup (Redis fast path, dedup record in mq_dedup
// committed with the cancellation mark, key and payload the order id).
// crash is the crash_after_effect fault; the dedup's metrics go to reg.
func (s *PaymentService) OrderCancelledHandler(group string, crash func(attrs ...any), reg prometheus.Registerer) (mqclient.Handler, error) {
	mark, err := s.dedup.Wrap(idempotent.Options{
		Group: group, Handler: HandlerOrderCancelled,
		Key: CancelledOrderID,
		Payload: func(m *mqclient.MessageExt) ([]byte, error) {
			k, err := CancelledOrderID(m)
			return []byte(k), err
		},
		RedisPolicy: idempotent.FailClosedDB,
		Logger:      s.log, Registerer: reg,
	}, s.MarkCancelledMessage)
	if err != nil {
		return nil, err
	}
	return s.HandleOrderCancelled(group, mark, crash), nil
}

// HandleOrderCancelled is the handler of order-events for group: other
// tags are acknowledged without effect; an undecodable OrderCancelled
// goes to the DLQ (middleware.Permanent); else mark (MarkCancelledMessage
// made idempotent, see OrderCancelledHandler) records the cancellation, the order's
// payment is refunded (RefundCancelled), and crash (the
// crash_after_effect fault) runs before the acknowledgement.
func (s *PaymentService) HandleOrderCancelled(group string, mark mqclient.Handler, crash func(attrs ...any)) mqclient.Handler {
	return func(ctx context.Context, m *mqclient.MessageExt) error {
		ev, ok, err := OrderCancelled(m)
		if !ok {
			return nil
		}
		log := s.log.With("topic", m.Topic, "group", group, "msg_id", m.MsgID, "tag", m.Tag)
		if err != nil {
			log.ErrorContext(ctx, "undecodable message; to the DLQ", "err", err)
			return middleware.Permanent(err)
		}
		log = log.With("order_id", ev.GetOrderId())
		if err := mark(ctx, m); err != nil {
			log.WarnContext(ctx, "OrderCancelled not applied; will retry", "err", err)
			return err
		}
		if err := s.RefundCancelled(ctx, ev); err != nil {
			log.WarnContext(ctx, "refund failed; will retry", "err", err)
			return err
		}
		log.InfoContext(ctx, "OrderCancelled handled")
		crash("order_id", ev.GetOrderId(), "msg_id", m.MsgID)
		return nil
	}
}
