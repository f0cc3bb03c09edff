package txmsg

import (
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tidemq/tide/pkg/mqclient"
)

// Option configures a Sender.
type Option func(*settings)

type settings struct {
	table        string
	checkTimeout time.Duration
	logger       *slog.Logger
	registerer   prometheus.Registerer
	producerOpts []mqclient.Option
	group        string
	hook         func(point string)
}

// defaults is the single place the defaults live.
func defaults() settings {
	return settings{
		table:        DefaultTable,
		checkTimeout: 2 * time.Second,
		logger:       slog.Default(),
		group:        "DEFAULT_PRODUCER",
	}
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Validate reports bad settings.
func (s *settings) validate() error {
	if !tableName.MatchString(s.table) {
		return fmt.Errorf("%w: table name %q", ErrInvalidOption, s.table)
	}
	if s.checkTimeout < time.Second {
		return fmt.Errorf("%w: check timeout %v is below 1s (innodb_lock_wait_timeout has a 1 s granularity)", ErrInvalidOption, s.checkTimeout)
	}
	if s.logger == nil {
		return fmt.Errorf("%w: nil logger", ErrInvalidOption)
	}
	return nil
}

// WithTable names the fence table (default tide_tx_fence). It must live in
// the same database as the business tables: the fence row and the
// business writes commit in one database transaction.
func WithTable(name string) Option { return func(s *settings) { s.table = name } }

// WithCheckTimeout bounds one check-back (default 2 s, at least 1 s). The
// check's fence insert waits at most this long for an open business
// transaction (SET SESSION innodb_lock_wait_timeout, whole seconds rounded
// up) and the whole check is also bounded by a context of this duration;
// a check that runs out of time answers UNKNOWN and the broker asks again
// after transactionCheckInterval. Keep it below the producer's request
// timeout (mqclient.WithRequestTimeout, 3 s), which also bounds the check.
func WithCheckTimeout(d time.Duration) Option { return func(s *settings) { s.checkTimeout = d } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithRegisterer registers the Sender's metrics (tide_txmsg_checks_total
// by outcome, tide_txmsg_sends_total by outcome) with r. Without it no
// metrics are kept.
func WithRegisterer(r prometheus.Registerer) Option { return func(s *settings) { s.registerer = r } }

// WithProducerOptions passes options to the underlying transactional
// producer (name servers, timeouts, logger...). Set the producer group
// with WithGroup, not here.
func WithProducerOptions(opts ...mqclient.Option) Option {
	return func(s *settings) { s.producerOpts = append(s.producerOpts, opts...) }
}

// WithGroup sets the producer group (mqclient.WithProducerGroup) and
// records it in the fence rows. It should name the application: the broker
// sends check-backs to any live producer of the group, so every instance
// must use the same group, database and fence table.
func WithGroup(name string) Option {
	return func(s *settings) {
		s.group = name
		s.producerOpts = append(s.producerOpts, mqclient.WithProducerGroup(name))
	}
}

// WithHook calls fn at the Sender's crash points, for fault injection in
// demos and end-to-end tests: "before-tx" (half message stored, before the
// database transaction begins), "in-tx" (the business function returned,
// before COMMIT) and "after-commit" (COMMIT succeeded, before
// END_TRANSACTION is sent). fn runs on the goroutine calling Send; it may
// block or end the process (that is the point: the check-back must then
// decide). Default: none.
func WithHook(fn func(point string)) Option { return func(s *settings) { s.hook = fn } }
