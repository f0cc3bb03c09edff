package service

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/go-kratos/kratos/v2/transport"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	v1 "github.com/tidemq/tide/api/payment/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/kit/api"
	"github.com/tidemq/tide/services/payment/internal/biz"
)

// IdempotencyHeader carries the idempotency key (HTTP header, gRPC
// metadata "idempotency-key").
const IdempotencyHeader = "Idempotency-Key"

// PaymentService serves the Payment API and handles order events.
type PaymentService struct {
	v1.UnimplementedPaymentServer

	uc  *biz.PaymentUsecase
	log *slog.Logger
}

// NewPaymentService returns the service.
func NewPaymentService(uc *biz.PaymentUsecase, l *slog.Logger) *PaymentService {
	return &PaymentService{uc: uc, log: l}
}

func status(s biz.Status) v1.PaymentStatus {
	switch s {
	case biz.StatusSucceeded:
		return v1.PaymentStatus_PAYMENT_STATUS_SUCCEEDED
	case biz.StatusRefunded:
		return v1.PaymentStatus_PAYMENT_STATUS_REFUNDED
	}
	return v1.PaymentStatus_PAYMENT_STATUS_UNSPECIFIED
}

func info(p *biz.Payment) *v1.PaymentInfo {
	return &v1.PaymentInfo{Id: p.ID, OrderId: p.OrderID, UserId: p.UserID, Amount: p.Amount, Status: status(p.Status),
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
