package txmsg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	checks *prometheus.CounterVec
	sends  *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	if r == nil {
		return &metrics{}, nil
	}
	m := &metrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tide_txmsg_checks_total",
			Help: "Check-backs answered, by outcome (commit, rollback, unknown)."}, []string{"outcome"}),
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tide_txmsg_sends_total",
			Help: "Send calls, by outcome (committed, rolled_back, fenced, unknown, failed)."}, []string{"outcome"}),
	}
	for _, c := range []**prometheus.CounterVec{&m.checks, &m.sends} {
		if err := r.Register(*c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
			existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, err
			}
			*c = existing // a second Sender on the same registry shares them
		}
	}
	return m, nil
}

func (m *metrics) check(outcome string) {
	if m.checks != nil {
		m.checks.WithLabelValues(outcome).Inc()
	}
}

func (m *metrics) send(outcome string) {
	if m.sends != nil {
		m.sends.WithLabelValues(outcome).Inc()
	}
}
