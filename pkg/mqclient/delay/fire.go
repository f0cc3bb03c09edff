package delay

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Check reports whether key's action is still due, reading the state
// with a lock (SELECT … FOR UPDATE) inside tx.
type Check func(ctx context.Context, tx *gorm.DB, key string) (still bool, err error)

// Act performs key's action inside tx, changing the state so that Check
// answers false afterwards.
type Act func(ctx context.Context, tx *gorm.DB, key string) error

// Fired describes one firing, for OnFire.
type Fired struct {
	Key string
	// At is the scheduled time (zero for the Sweeper).
	At time.Time
	// Acted: Check said still due and Act committed. False: a no-op, or
	// Err is set.
	Acted bool
	// Early: delivered before At and refused (Handler only).
	Early bool
	// Sweeper: the firing came from the Sweeper, not a timer.
	Sweeper bool
	Err     error
}

// Fire runs Check and, if still due, Act in one transaction of db. It is
// the single path of both Handler and Sweeper, so each may run any number
// of times for a key: the first that finds the action due performs it,
// the rest are no-ops. An error rolls back both.
func Fire(ctx context.Context, db *gorm.DB, key string, check Check, act Act) (acted bool, err error) {
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		still, err := check(ctx, tx, key)
		if err != nil || !still {
			return err
		}
		if err := act(ctx, tx, key); err != nil {
			return err
		}
		acted = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("delay: fire %s: %w", key, err)
	}
	return acted, nil
}

type fireMetrics struct {
	fired    *prometheus.CounterVec
	lateness prometheus.Histogram
	swept    prometheus.Counter
}

func newFireMetrics(reg prometheus.Registerer) (*fireMetrics, error) {
	m := &fireMetrics{
		fired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tide_delay_fired_total",
			Help: "Delayed actions delivered, by result (acted, noop, early, error)."}, []string{"result"}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tide_delay_lateness_seconds",
			Help: "Time from an action's scheduled time to its handling.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 16)}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{Name: "tide_delay_swept_total",
			Help: "Overdue actions performed by the sweeper (missed by their timers)."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.fired, m.lateness, m.swept} {
			if err := reg.Register(c); err != nil {
				if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
					switch c.(type) {
					case *prometheus.CounterVec:
						m.fired = are.ExistingCollector.(*prometheus.CounterVec)
					case prometheus.Histogram:
						m.lateness = are.ExistingCollector.(prometheus.Histogram)
					case prometheus.Counter:
						m.swept = are.ExistingCollector.(prometheus.Counter)
					}
					continue
				}
				return nil, fmt.Errorf("delay: register metrics: %w", err)
			}
		}
	}
	return m, nil
}

// Handler returns the consumer handler of delayed actions: it reads the
// key and time Schedule wrote, refuses a message that arrives before its
// time (ErrEarly: redelivered later), and runs Fire. Subscribe it on a
// concurrent consumer of the action's topic. It panics never; a bad
// message returns ErrNoAction (retried, then dead-lettered). Options:
// WithLogger, WithRegisterer, OnFire.
func Handler(db *gorm.DB, check Check, act Act, opts ...Option) (mqclient.Handler, error) {
	if db == nil || check == nil || act == nil {
		return nil, fmt.Errorf("%w: db, check and act are required", ErrInvalid)
	}
	cfg := newConfig(opts)
	m, err := newFireMetrics(cfg.reg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, msg *mqclient.MessageExt) error {
		key := msg.Properties[PropKey]
		ms, perr := strconv.ParseInt(msg.Properties[PropAt], 10, 64)
		if key == "" || perr != nil {
			m.fired.WithLabelValues("error").Inc()
			return fmt.Errorf("%w: msgId %s", ErrNoAction, msg.MsgID)
		}
		at := time.UnixMilli(ms)
		f := Fired{Key: key, At: at}
		if now := time.Now(); now.Before(at) {
			f.Early = true
			m.fired.WithLabelValues("early").Inc()
			cfg.log.Warn("delay: action delivered early, refused", "key", key, "at", at, "early", at.Sub(now))
			if cfg.onFire != nil {
				cfg.onFire(f)
			}
			return fmt.Errorf("%w: %s due at %s", ErrEarly, key, at.Format(time.RFC3339Nano))
		}
		m.lateness.Observe(time.Since(at).Seconds())
		f.Acted, f.Err = Fire(ctx, db, key, check, act)
		switch {
		case f.Err != nil:
			m.fired.WithLabelValues("error").Inc()
		case f.Acted:
			m.fired.WithLabelValues("acted").Inc()
		default:
			m.fired.WithLabelValues("noop").Inc()
		}
		if cfg.onFire != nil {
			cfg.onFire(f)
		}
		return f.Err
	}, nil
}

// Overdue returns up to limit keys whose action was due before cutoff and
// whose state still calls for it (e.g. UNPAID orders with deadline <
// cutoff), using db.
type Overdue func(ctx context.Context, db *gorm.DB, cutoff time.Time, limit int) ([]string, error)

// Sweeper is the backstop for timers that were never created or were lost:
// it periodically queries overdue keys and runs Fire for each. Not safe
// for concurrent Run calls on one Sweeper; several instances may sweep at
// once (Fire's Check makes the loser a no-op).
type Sweeper struct {
	db      *gorm.DB
	overdue Overdue
	check   Check
	act     Act
	cfg     config
	m       *fireMetrics
}

// NewSweeper returns a Sweeper. Options: WithInterval, WithBatch,
// WithGrace, WithLogger, WithRegisterer, OnFire.
func NewSweeper(db *gorm.DB, overdue Overdue, check Check, act Act, opts ...Option) (*Sweeper, error) {
	if db == nil || overdue == nil || check == nil || act == nil {
		return nil, fmt.Errorf("%w: db, overdue, check and act are required", ErrInvalid)
	}
	cfg := newConfig(opts)
	if cfg.interval <= 0 || cfg.batch <= 0 || cfg.grace < 0 {
		return nil, fmt.Errorf("%w: interval and batch must be positive, grace not negative", ErrInvalid)
	}
	m, err := newFireMetrics(cfg.reg)
	if err != nil {
		return nil, err
	}
	return &Sweeper{db: db, overdue: overdue, check: check, act: act, cfg: cfg, m: m}, nil
}

// maxBatchesPerSweep bounds one sweep, so that a query that keeps
// returning keys Check rejects cannot loop forever.
const maxBatchesPerSweep = 100

// SweepOnce queries and fires overdue keys, batch after batch while full
// batches come back, and returns how many actions it performed. A failed
// key is logged and left for the next sweep.
func (s *Sweeper) SweepOnce(ctx context.Context) (acted int, err error) {
	for b := 0; b < maxBatchesPerSweep; b++ {
		keys, err := s.overdue(ctx, s.db.WithContext(ctx), time.Now().Add(-s.cfg.grace), s.cfg.batch)
		if err != nil {
			return acted, fmt.Errorf("delay: sweep query: %w", err)
		}
		progress := 0
		for _, k := range keys {
			if ctx.Err() != nil {
				return acted, ctx.Err()
			}
			f := Fired{Key: k, Sweeper: true}
			f.Acted, f.Err = Fire(ctx, s.db, k, s.check, s.act)
			if f.Err != nil {
				s.cfg.log.Warn("delay: sweeper fire", "key", k, "err", f.Err)
			} else if f.Acted {
				acted++
				progress++
				s.m.swept.Inc()
				s.cfg.log.Warn("delay: sweeper performed an overdue action (its timer was missing or late)", "key", k)
			}
			if s.cfg.onFire != nil {
				s.cfg.onFire(f)
			}
		}
		if len(keys) < s.cfg.batch || progress == 0 {
			break
		}
	}
	return acted, nil
}

// Run sweeps every WithInterval until ctx is done; it returns nil then.
// Query errors are logged and retried at the next interval.
func (s *Sweeper) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.interval)
	defer t.Stop()
	for {
		if _, err := s.SweepOnce(ctx); err != nil && ctx.Err() == nil {
			s.cfg.log.Warn("delay: sweep", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
