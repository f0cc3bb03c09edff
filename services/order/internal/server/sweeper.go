package server

import (
	"context"
	"sync"
	"time"

	"github.com/go-kratos/kratos/v2/log"

	"github.com/tidemq/tide/services/order/internal/biz"
	"github.com/tidemq/tide/services/order/internal/conf"
)

// Sweeper periodically cancels live orders past their deadline: the
// backstop for lost cancellation timers. It is a transport.Server.
type Sweeper struct {
	uc       *biz.OrderUsecase
	interval time.Duration
	log      *log.Helper

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewSweeper returns the sweeper; an interval of 0 disables it.
func NewSweeper(c *conf.Order, uc *biz.OrderUsecase, logger log.Logger) *Sweeper {
	return &Sweeper{uc: uc, interval: c.GetSweepInterval().AsDuration(),
		log: log.NewHelper(log.With(logger, "module", "order/sweeper"))}
}

// Start launches the sweep loop and returns.
func (s *Sweeper) Start(context.Context) error {
	if s.interval <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go s.loop(ctx, s.done)
	return nil
}

func (s *Sweeper) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := s.uc.SweepOverdue(ctx, 100)
		if err != nil && ctx.Err() == nil {
			s.log.Warnf("sweep: %v", err)
		}
		if n > 0 {
			s.log.Infof("sweep cancelled %d overdue orders", n)
		}
	}
}

// Stop ends the loop, waiting for a running sweep until ctx is done.
func (s *Sweeper) Stop(ctx context.Context) error {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
