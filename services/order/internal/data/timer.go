package data

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/delay"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/services/order/internal/biz"
)

// NewScheduler returns the delay.Scheduler of cancellation timers, on the
// sender's producer and an admin client (for recalls) on the process's
// client mc. cleanup closes both.
func NewScheduler(mc *mqclient.Client, s *txmsg.Sender, reg prometheus.Registerer, l *slog.Logger) (*delay.Scheduler, func(), error) {
	a, err := mqclient.NewAdmin(mqclient.WithClient(mc))
	if err != nil {
		return nil, nil, fmt.Errorf("data: admin: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("data: start admin: %w", err)
	}
	sch, err := delay.New(s.Producer(), a, delay.WithRegisterer(reg), delay.WithLogger(l.With("module", "order/delay")))
	if err != nil {
		a.Shutdown(ctx)
		return nil, nil, fmt.Errorf("data: scheduler: %w", err)
	}
	return sch, func() {
		sch.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a.Shutdown(ctx)
	}, nil
}

type cancelTimer struct {
	s *delay.Scheduler
}

// NewCancelTimer returns the biz.CancelTimer on pkg/mqclient/delay: a
// broker timer message on order-cancel-timer (key = order id, property
// delay.PropAt = the deadline, body = OrderCancelTimer), recalled through
// Tide's recall request. The handle is delay's Handle string.
func NewCancelTimer(s *delay.Scheduler) biz.CancelTimer { return &cancelTimer{s: s} }

func (t *cancelTimer) Schedule(ctx context.Context, orderID string, at time.Time) (string, error) {
	body, err := eventv1.Marshal(&eventv1.OrderCancelTimer{OrderId: orderID, DueAt: timestamppb.New(at)})
	if err != nil {
		return "", err
	}
	h, err := t.s.Schedule(ctx, delay.Action{Topic: eventv1.TopicOrderCancelTimer, Key: orderID, At: at, Payload: body})
	if err != nil {
		return "", fmt.Errorf("schedule cancellation of order %s: %w", orderID, err)
	}
	return string(h), nil
}

func (t *cancelTimer) Recall(ctx context.Context, handle string) error {
	h, err := delay.ParseHandle(handle)
	if err != nil {
		return err
	}
	res, err := t.s.Recall(ctx, h)
	if err != nil {
		return err
	}
	if res != delay.Recalled {
		return fmt.Errorf("recall: %s", res)
	}
	return nil
}
