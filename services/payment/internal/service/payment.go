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

// HandleOrderEvent handles order-events for the payment service:
// OrderCancelled refunds the order's payment once. Other tags are
// acknowledged. It is a mqclient.Handler (nil acknowledges).
func (s *PaymentService) HandleOrderEvent(ctx context.Context, m *mqclient.MessageExt) error {
	if m.Tag != eventv1.TagOrderCancelled {
		return nil
	}
	var ev eventv1.OrderCancelled
	if err := eventv1.Unmarshal(m.Body, &ev); err != nil {
		return fmt.Errorf("payment: message %s: %w", m.MsgID, err)
	}
	refunded, err := s.uc.OrderCancelled(ctx, ev.GetOrderId(), ev.GetReason())
	if err != nil {
		return fmt.Errorf("payment: OrderCancelled %s: %w", ev.GetOrderId(), err)
	}
	s.log.InfoContext(ctx, "payment: order cancelled", "order_id", ev.GetOrderId(), "refunded", refunded, "msg_id", m.MsgID)
	return nil
}
