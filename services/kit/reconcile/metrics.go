package reconcile

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are registered only with WithRegisterer; without it they are
// kept but not exported.
type metrics struct {
	runs          *prometheus.CounterVec   // job, result
	discrepancies *prometheus.CounterVec   // job, class
	repairs       *prometheus.CounterVec   // job, result
	duration      *prometheus.HistogramVec // job
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mqclient_reconcile_runs_total",
			Help: "Reconciliation runs by result (done, dry_run, lease_held, lease_lost, error)."}, []string{"job", "result"}),
		discrepancies: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mqclient_reconcile_discrepancies_total",
			Help: "Discrepancies found by class (in_flight counts items inside the grace window)."}, []string{"job", "class"}),
		repairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mqclient_reconcile_repairs_total",
			Help: "Repair calls by result (ok, error, gave_up)."}, []string{"job", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mqclient_reconcile_run_seconds",
			Help: "Duration of runs that held the lease.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 10)}, []string{"job"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.runs, err = register(reg, m.runs)
	if err == nil {
		m.discrepancies, err = register(reg, m.discrepancies)
	}
	if err == nil {
		m.repairs, err = register(reg, m.repairs)
	}
	if err == nil {
		m.duration, err = register(reg, m.duration)
	}
	return m, err
}

// register reuses a collector already registered by another Runner on the
// same registry.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(C); ok {
				return ex, nil
			}
		}
		return c, err
	}
	return c, nil
}
