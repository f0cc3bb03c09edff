package idempotent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"gorm.io/gorm"
)

// CleanerOptions configure a Cleaner.
type CleanerOptions struct {
	// Table is the dedup table (default DefaultTable).
	Table string
	// Retention is how long records are kept (default 30 days). It must
	// be at least the longest time after which a message can still be
	// redelivered: the retry schedule (RocketMQ: 16 retries ≈ 4 h 46 min),
	// plus the DLQ's retention (the broker's file retention, 72 h by
	// default), plus however late operators may replay from the DLQ or
	// resend by hand. A record deleted earlier lets that late redelivery
	// apply its effect a second time.
	Retention time.Duration
	// BatchSize rows are deleted per statement (default 1000), so that
	// each DELETE holds its locks briefly.
	BatchSize int
	// Pause between batches (default 100 ms) leaves room to the hot path.
	Pause time.Duration
	// Interval between passes of Run (default 1 h).
	Interval time.Duration
	// Logger (default: discard).
	Logger *slog.Logger
}

// Cleaner deletes dedup records older than the retention in small
// batches. Several instances may run at once (each DELETE is independent);
// one per deployment is enough.
type Cleaner struct {
	db   *gorm.DB
	opts CleanerOptions
}

// NewCleaner returns a Cleaner of db.
func NewCleaner(db *gorm.DB, opts CleanerOptions) (*Cleaner, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil database", ErrInvalidOptions)
	}
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if opts.Retention == 0 {
		opts.Retention = 30 * 24 * time.Hour
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = 1000
	}
	if opts.Pause == 0 {
		opts.Pause = 100 * time.Millisecond
	}
	if opts.Interval == 0 {
		opts.Interval = time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Retention < 0 || opts.BatchSize < 0 || opts.Pause < 0 || opts.Interval < 0 {
		return nil, fmt.Errorf("%w: negative cleaner option", ErrInvalidOptions)
	}
	if err := validTable(opts.Table); err != nil {
		return nil, err
	}
	return &Cleaner{db: db, opts: opts}, nil
}

// Clean runs one pass: DELETE ... WHERE created_at < now - Retention LIMIT
// BatchSize until a batch deletes fewer rows, pausing between batches. The
// cutoff uses the database clock, as created_at does. It returns the
// number of rows deleted; it stops early (with ctx's error) when ctx ends.
func (c *Cleaner) Clean(ctx context.Context) (int64, error) {
	var total int64
	q := "DELETE FROM `" + c.opts.Table + "` WHERE created_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND LIMIT ?"
	for {
		res := c.db.WithContext(ctx).Exec(q, c.opts.Retention.Microseconds(), c.opts.BatchSize)
		if res.Error != nil {
			return total, fmt.Errorf("idempotent: cleanup: %w", res.Error)
		}
		total += res.RowsAffected
		if res.RowsAffected < int64(c.opts.BatchSize) {
			return total, nil
		}
		t := time.NewTimer(c.opts.Pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return total, ctx.Err()
		case <-t.C:
		}
	}
}

// Run calls Clean at once and then every Interval until ctx ends, logging
// failures (the next pass retries). It blocks; it returns nil when ctx
// ends.
func (c *Cleaner) Run(ctx context.Context) error {
	for {
		start := time.Now()
		n, err := c.Clean(ctx)
		if err != nil && ctx.Err() == nil {
			c.opts.Logger.Warn("idempotent: cleanup pass failed", "table", c.opts.Table, "deleted", n, "err", err)
		} else if n > 0 {
			c.opts.Logger.Info("idempotent: cleanup pass", "table", c.opts.Table, "deleted", n, "took", time.Since(start))
		}
		t := time.NewTimer(c.opts.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
