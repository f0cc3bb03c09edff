package reconcile

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a Runner.
type Option func(*settings)

type settings struct {
	repairable  map[Class]bool
	pageSize    int
	leaseTTL    time.Duration
	leasePrefix string
	maxAttempts int
	logger      *slog.Logger
	registerer  prometheus.Registerer
}

// defaultSettings is the one place defaults live.
func defaultSettings() settings {
	return settings{
		repairable:  map[Class]bool{},
		pageSize:    500,
		leaseTTL:    30 * time.Second,
		leasePrefix: "reconcile:lease:",
		maxAttempts: 3,
		logger:      slog.Default(),
	}
}

func (s *settings) validate() error {
	var errs []error
	if s.pageSize <= 0 {
		errs = append(errs, fmt.Errorf("page size %d", s.pageSize))
	}
	if s.leaseTTL < 30*time.Millisecond {
		errs = append(errs, fmt.Errorf("lease TTL %v below 30ms", s.leaseTTL))
	}
	if s.maxAttempts <= 0 {
		errs = append(errs, fmt.Errorf("max repair attempts %d", s.maxAttempts))
	}
	if s.repairable[InFlight] {
		errs = append(errs, errors.New("in_flight cannot be repairable"))
	}
	if s.logger == nil {
		errs = append(errs, errors.New("nil logger"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return nil
}

// WithRepair whitelists classes for automatic repair. Nothing is repaired
// by default: every discrepancy stays open for a human.
func WithRepair(classes ...Class) Option {
	return func(s *settings) {
		for _, c := range classes {
			s.repairable[c] = true
		}
	}
}

// WithPageSize sets Scan.Limit (default 500). Each page is one checkpoint.
func WithPageSize(n int) Option { return func(s *settings) { s.pageSize = n } }

// WithLeaseTTL sets the Redis lease's time to live (default 30 s); it is
// renewed every TTL/3 and at every checkpoint. A crashed runner blocks the
// job for at most TTL.
func WithLeaseTTL(d time.Duration) Option { return func(s *settings) { s.leaseTTL = d } }

// WithLeasePrefix sets the Redis key prefix of the per-job lease (default
// "reconcile:lease:"; the key is prefix + job name).
func WithLeasePrefix(p string) Option { return func(s *settings) { s.leasePrefix = p } }

// WithMaxRepairAttempts sets how many failed Repair calls turn a
// discrepancy back to open (default 3).
func WithMaxRepairAttempts(n int) Option { return func(s *settings) { s.maxAttempts = n } }

// WithLogger sets the logger (default slog.Default).
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithRegisterer registers the runner's metrics (see metrics.go) with reg.
func WithRegisterer(reg prometheus.Registerer) Option {
	return func(s *settings) { s.registerer = reg }
}
