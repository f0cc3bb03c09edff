package console

import (
	"context"
	"sync"
	"time"
)

// sampler keeps the last two samples of monotonic totals (messages put
// into a broker, a topic's summed queue offsets) and turns them into per
// second rates. Safe for concurrent use.
type sampler struct {
	mu   sync.Mutex
	last map[string][2]sample // [older, newer]
}

type sample struct {
	at time.Time
	v  float64
}

func newSampler() *sampler { return &sampler{last: map[string][2]sample{}} }

// observe records v for key at now. A sample less than a second after
// the newer one is dropped, so page views between sampler ticks do not
// shrink the interval rates are computed over to nothing.
func (s *sampler) observe(key string, v float64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.last[key]
	if !p[1].at.IsZero() && now.Sub(p[1].at) < time.Second {
		return
	}
	s.last[key] = [2]sample{p[1], {now, v}}
}

// rate returns the per second change of key between its two samples, and
// false when there are not two yet (or a counter went back: a restart).
func (s *sampler) rate(key string) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.last[key]
	if p[0].at.IsZero() || !p[1].at.After(p[0].at) || p[1].v < p[0].v {
		return 0, false
	}
	return (p[1].v - p[0].v) / p[1].at.Sub(p[0].at).Seconds(), true
}

// sample reads every broker's totals and every topic's offsets once.
// Errors are skipped: the pages report them when someone looks.
func (s *Server) sample(ctx context.Context) {
	bs, err := s.brokers(ctx)
	if err != nil {
		return
	}
	for _, b := range bs {
		s.runtimeInfo(ctx, b.Addr) // records the totals
	}
	if s.ctl != nil {
		s.replicaGroups(ctx) // records elections
	}
	topics, err := s.admin.Topics(ctx)
	if err != nil {
		return
	}
	for _, t := range topics {
		if ctx.Err() != nil {
			return
		}
		s.topicQueues(ctx, t) // records the offsets
	}
}
