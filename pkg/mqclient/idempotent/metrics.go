package idempotent

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// counter names one metric of the package.
type counter int

const (
	mHits       counter = iota // labels: group, handler, source (redis|db)
	mFallbacks                 // group, handler, policy
	mMismatches                // group, handler
	mClaimsLost                // group, handler, reason (busy|expired)
	mApplied                   // group, handler
	mTransient                 // group, handler
	nCounters
)

// metrics are the package's collectors; a nil *metrics records nothing.
// Several Consumers and Stores may share one Registerer: collectors
// already registered are reused.
type metrics struct {
	c [nCounters]*prometheus.CounterVec
}

var counterDefs = [nCounters]struct {
	name, help string
	extra      []string
}{
	mHits:       {"dedup_hits_total", "Duplicates acknowledged without effect, by where they were detected (redis, db).", []string{"source"}},
	mFallbacks:  {"redis_fallbacks_total", "Deliveries handled while Redis failed, by policy.", []string{"policy"}},
	mMismatches: {"payload_mismatches_total", "Keys reused with a different payload fingerprint.", nil},
	mClaimsLost: {"claims_lost_total", "Redis claims not obtained (busy) or expired before the commit (expired).", []string{"reason"}},
	mApplied:    {"effects_applied_total", "Effects committed with their dedup record.", nil},
	mTransient:  {"transient_errors_total", "Deadlocks, lock wait timeouts and vanished records (retried).", nil},
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{}
	for i, d := range counterDefs {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idempotent_" + d.name, Help: d.help},
			append([]string{"group", "handler"}, d.extra...))
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
			existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, err
			}
			c = existing
		}
		m.c[i] = c
	}
	return m, nil
}

func (m *metrics) inc(c counter, labels ...string) {
	if m == nil {
		return
	}
	m.c[c].WithLabelValues(labels...).Inc()
}
