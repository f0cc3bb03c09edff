// Package cleanup deletes a service's old transactional-message fence rows
// (pkg/mqclient/txmsg, table tide_tx_fence) and dedup records
// (pkg/mqclient/idempotent, table mq_dedup) periodically, through the
// patterns' own txmsg.Cleanup and idempotent.Cleaner, and counts what it
// deleted in a Prometheus counter.
//
// Single instance: the pattern packages export no lease (the reconcile
// runner's Redis lease is internal to it), so every instance of a service
// runs its own Cleaner. That is safe: each pass is a series of small,
// independent DELETE ... WHERE created_at < cutoff LIMIT n statements, so
// concurrent passes only share the work (and the counter then counts each
// row once, on the instance that deleted it).
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/kratosmq"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
)

// Retention bounds.
//
// A fence row must outlive every check-back of its half message: the
// broker checks for transactionTimeOut + transactionCheckMax ×
// transactionCheckInterval (RocketMQ's defaults: 6 s + 15 × 60 s ≈ 15 min),
// and a row deleted before the last check makes that check insert a
// rollback marker and roll back a committed message. A dedup record must
// outlive every redelivery of its message: the retry schedule (16 retries
// ≈ 4 h 46 min), plus the dead-letter queue's retention (the broker's file
// retention, 72 h by default), plus replays from the DLQ; a record deleted
// earlier lets a late copy apply its effect twice. The larger horizon is
// about 77 h, so MinRetention refuses anything shorter than 80 h and
// DefaultRetention keeps 7 days, room for an operator's replay after a
// long weekend.
const (
	DefaultRetention = 7 * 24 * time.Hour
	MinRetention     = 80 * time.Hour
	DefaultInterval  = time.Hour
)

// ErrInvalidOptions: an option is out of range.
var ErrInvalidOptions = errors.New("cleanup: invalid options")

// Options configure a Cleaner.
type Options struct {
	// FenceTable is the txmsg fence table to clean ("": none).
	FenceTable string
	// DedupTable is the idempotent dedup table to clean ("": none).
	DedupTable string
	// Retention: rows created longer ago are deleted (0: DefaultRetention;
	// below MinRetention: ErrInvalidOptions).
	Retention time.Duration
	// Interval between passes of Run (0: DefaultInterval).
	Interval time.Duration
	// Disabled makes Run only wait for its context to end (another job
	// cleans the tables); Clean still works.
	Disabled bool
	// BatchSize rows per DELETE statement (0: the patterns' defaults).
	BatchSize int
	// Logger receives a record per pass that deleted rows or failed
	// (slog.Default() when nil).
	Logger *slog.Logger
	// Registerer gets the counters (nil: not registered):
	// tide_cleanup_deleted_rows_total{table} and
	// tide_cleanup_failures_total{table}.
	Registerer prometheus.Registerer
}

// Cleaner deletes old rows from the configured tables. Safe for
// concurrent use.
type Cleaner struct {
	db       *gorm.DB
	o        Options
	dedup    *idempotent.Cleaner
	deleted  *prometheus.CounterVec
	failures *prometheus.CounterVec
}

// New returns a Cleaner of db's tables. It fails with ErrInvalidOptions
// for a negative option, a retention below MinRetention or no table, and
// when the counters cannot be registered.
func New(db *gorm.DB, o Options) (*Cleaner, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil database", ErrInvalidOptions)
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	switch {
	case o.Retention < MinRetention:
		return nil, fmt.Errorf("%w: retention %v is below %v (the check-back and redelivery horizon)", ErrInvalidOptions, o.Retention, MinRetention)
	case o.Interval < 0 || o.BatchSize < 0:
		return nil, fmt.Errorf("%w: negative interval or batch size", ErrInvalidOptions)
	case o.FenceTable == "" && o.DedupTable == "":
		return nil, fmt.Errorf("%w: no table to clean", ErrInvalidOptions)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &Cleaner{db: db, o: o,
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tide_cleanup_deleted_rows_total",
			Help: "Rows the periodic cleanup deleted, by table."}, []string{"table"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tide_cleanup_failures_total",
			Help: "Cleanup passes that failed, by table."}, []string{"table"}),
	}
	if o.DedupTable != "" {
		d, err := idempotent.NewCleaner(db, idempotent.CleanerOptions{Table: o.DedupTable, Retention: o.Retention,
			BatchSize: o.BatchSize, Interval: o.Interval, Logger: o.Logger})
		if err != nil {
			return nil, fmt.Errorf("cleanup: %w", err)
		}
		c.dedup = d
	}
	if o.Registerer != nil {
		for _, cv := range []*prometheus.CounterVec{c.deleted, c.failures} {
			if err := o.Registerer.Register(cv); err != nil {
				return nil, fmt.Errorf("cleanup: metrics: %w", err)
			}
		}
	}
	for _, t := range c.tables() {
		c.deleted.WithLabelValues(t)
		c.failures.WithLabelValues(t)
	}
	return c, nil
}

func (c *Cleaner) tables() []string {
	var ts []string
	if c.o.FenceTable != "" {
		ts = append(ts, c.o.FenceTable)
	}
	if c.o.DedupTable != "" {
		ts = append(ts, c.o.DedupTable)
	}
	return ts
}

// Retention returns the effective retention.
func (c *Cleaner) Retention() time.Duration { return c.o.Retention }

// Clean runs one pass over each table: it deletes the rows created more
// than Retention ago (by the database clock, as the patterns write
// created_at) and returns how many it deleted per table. A failing table
// does not stop the others; the errors are joined. It logs each table that
// deleted rows or failed and adds to the counters.
func (c *Cleaner) Clean(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	var errs []error
	for _, t := range c.tables() {
		start := time.Now()
		var n int64
		var err error
		if t == c.o.FenceTable {
			n, err = txmsg.Cleanup(ctx, c.db, t, c.o.Retention, c.o.BatchSize)
		} else {
			n, err = c.dedup.Clean(ctx)
		}
		out[t] = n
		c.deleted.WithLabelValues(t).Add(float64(n))
		switch {
		case err != nil && ctx.Err() != nil: // stopping: not a failure
			errs = append(errs, err)
		case err != nil:
			c.failures.WithLabelValues(t).Inc()
			c.o.Logger.Warn("cleanup: pass failed", "table", t, "deleted", n, "err", err)
			errs = append(errs, err)
		case n > 0:
			c.o.Logger.Info("cleanup: deleted old rows", "table", t, "deleted", n,
				"retention", c.o.Retention, "took", time.Since(start))
		}
	}
	return out, errors.Join(errs...)
}

// Run calls Clean at once and then every Interval until ctx ends (with
// Options.Disabled it only waits); a failed pass is logged and retried at
// the next one. It blocks and returns nil when ctx ends.
func (c *Cleaner) Run(ctx context.Context) error {
	if c.o.Disabled {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(c.o.Interval)
	defer t.Stop()
	for {
		_, _ = c.Clean(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Server returns Run as a Kratos transport.Server named name: Start runs
// it in the background, Stop cancels it and waits for the pass in progress.
func (c *Cleaner) Server(name string) *kratosmq.Task {
	return kratosmq.Loop(name, c.Run)
}
