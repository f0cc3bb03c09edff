package server

import (
	"context"
	"time"

	"log/slog"

	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/services/order/internal/conf"
	"github.com/tidemq/tide/services/order/internal/service"
)

// Sweeper periodically cancels live orders past their deadline
// (EventService.SweepOverdue): the backstop of the delay pattern for
// timers that were lost (a broker that forgot them, a crash between the
// timer and the order). It runs as a kratosmq.Loop; an interval of 0
// disables it.
type Sweeper struct{ *kratosmq.Task }

// NewSweeper returns the sweeper.
func NewSweeper(c *conf.Order, events *service.EventService, l *slog.Logger) *Sweeper {
	h := l.With("module", "order/sweeper")
	interval := c.GetSweepInterval().AsDuration()
	return &Sweeper{kratosmq.Loop("order-sweeper", func(ctx context.Context) error {
		if interval <= 0 {
			<-ctx.Done()
			return nil
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			n, err := events.SweepOverdue(ctx, 100)
			if err != nil && ctx.Err() == nil {
				h.Warn("sweep", "err", err)
			}
			if n > 0 {
				h.Info("sweep cancelled overdue orders", "count", n)
			}
		}
	})}
}
