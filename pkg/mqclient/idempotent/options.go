package idempotent

import (
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Policy says what a Consumer does when Redis fails (errors or times out).
// It is chosen per handler.
type Policy int

const (
	// FailClosedDB (the default) skips Redis and relies on the database
	// alone: the dedup insert is the first statement of the transaction,
	// so concurrent deliveries of one key serialise on its unique key and
	// the effect still happens at most once. Slower (a DB round trip per
	// duplicate, lock waits instead of fast ErrInProgress). For
	// money-moving handlers. Requires a database.
	FailClosedDB Policy = iota
	// FailClosedRetry returns ErrRedisUnavailable: the message is retried
	// later and nothing runs while Redis is down. For handlers whose
	// effect is not (only) in the database and must not run unclaimed.
	FailClosedRetry
	// FailOpen proceeds without the Redis claim and fast path. With a
	// database it is as safe as FailClosedDB (the record still holds);
	// without one (Redis-only consumers) the effect may run twice while
	// Redis is down. Only for non-critical handlers (notifications,
	// caches).
	FailOpen
)

func (p Policy) String() string {
	switch p {
	case FailClosedDB:
		return "fail_closed_db"
	case FailClosedRetry:
		return "fail_closed_retry"
	case FailOpen:
		return "fail_open"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// Options configure a Consumer. Group and Handler are required; the rest
// have defaults (see withDefaults).
type Options struct {
	// Group is the consumer group; Handler names the handler within it.
	// Together with the business key they scope a dedup record, so two
	// handlers of one event never share records.
	Group, Handler string
	// Key returns the business key of a message (an order id, a payment
	// id): the same logical event must give the same key even when a
	// producer retry gave it a new message id. Default: m.Key()
	// (ShardingKey, else the first of Keys). An error, an empty key or a
	// key longer than MaxKeyLen fails the message with ErrBadKey.
	Key func(*mqclient.MessageExt) (string, error)
	// Payload returns the canonical payload whose SHA-256 is the
	// fingerprint compared on duplicates. Default: the body. Return a
	// canonical form if equal events may be encoded differently (field
	// order, timestamps of the resend).
	Payload func(*mqclient.MessageExt) ([]byte, error)
	// RedisPolicy applies when Redis fails; default FailClosedDB.
	RedisPolicy Policy
	// ClaimTTL bounds the Redis in-progress claim (default 10 s). The
	// claim is a lease: its holder renews it every ClaimTTL/3 while the
	// effect runs, so it needs not exceed the longest effect; a crashed
	// holder's claim expires within ClaimTTL. A delivery that finds the
	// key claimed waits (inside the delivery, up to ClaimTTL plus one
	// RedisTimeout) for the claim to end: a concurrent duplicate is then
	// acknowledged, and an orphaned claim never uses up reconsume
	// attempts, whatever the retry delays. Only a live holder still
	// working after that wait makes it return ErrInProgress. Use the same
	// ClaimTTL on every instance of a group.
	ClaimTTL time.Duration
	// DoneTTL is how long the Redis "done" marker lives (default 24 h).
	// It is a cache: the database record decides after it expires.
	DoneTTL time.Duration
	// RedisTimeout bounds each Redis call (default 200 ms), so that a
	// hung Redis triggers the policy quickly. It holds whatever the
	// client's options (see the package doc on ContextTimeoutEnabled).
	RedisTimeout time.Duration
	// AckMismatch acknowledges a message whose key was done with another
	// payload (still logged and counted) instead of returning
	// ErrPayloadMismatch (default: return it, so it goes to retry/DLQ).
	AckMismatch bool
	// Table is the dedup table (default DefaultTable).
	Table string
	// KeyPrefix prefixes Redis keys (default "tide:idem").
	KeyPrefix string
	// Logger gets warnings (Redis fallbacks, lost claims) and errors
	// (payload mismatches). Default: discard.
	Logger *slog.Logger
	// Registerer, if set, receives the metrics (see package doc).
	Registerer prometheus.Registerer
}

// withDefaults returns o with every zero field set to its default: the
// single place defaults live.
func (o Options) withDefaults() Options {
	if o.Key == nil {
		o.Key = func(m *mqclient.MessageExt) (string, error) { return m.Key(), nil }
	}
	if o.Payload == nil {
		o.Payload = func(m *mqclient.MessageExt) ([]byte, error) { return m.Body, nil }
	}
	if o.ClaimTTL == 0 {
		o.ClaimTTL = 10 * time.Second
	}
	if o.DoneTTL == 0 {
		o.DoneTTL = 24 * time.Hour
	}
	if o.RedisTimeout == 0 {
		o.RedisTimeout = 200 * time.Millisecond
	}
	if o.Table == "" {
		o.Table = DefaultTable
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = "tide:idem"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// Validate reports what is wrong with o (after defaults).
func (o Options) Validate() error {
	o = o.withDefaults()
	switch {
	case o.Group == "" || len(o.Group) > MaxScopeLen:
		return fmt.Errorf("%w: Group must be 1..%d bytes", ErrInvalidOptions, MaxScopeLen)
	case o.Handler == "" || len(o.Handler) > MaxScopeLen:
		return fmt.Errorf("%w: Handler must be 1..%d bytes", ErrInvalidOptions, MaxScopeLen)
	case o.RedisPolicy < FailClosedDB || o.RedisPolicy > FailOpen:
		return fmt.Errorf("%w: unknown RedisPolicy %v", ErrInvalidOptions, o.RedisPolicy)
	case o.ClaimTTL < 30*time.Millisecond || o.DoneTTL < time.Millisecond || o.RedisTimeout < 0:
		return fmt.Errorf("%w: ClaimTTL must be >= 30ms (it is renewed every third of it), DoneTTL >= 1ms", ErrInvalidOptions)
	}
	return validTable(o.Table)
}

// Fingerprint returns the SHA-256 of parts, each length-prefixed so that
// ("ab","c") and ("a","bc") differ. Use it to build a request fingerprint
// for Store.Do from the fields that define "the same request".
func Fingerprint(parts ...[]byte) []byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		l := uint64(len(p))
		for i := range n {
			n[i] = byte(l >> (56 - 8*i))
		}
		h.Write(n[:])
		h.Write(p)
	}
	return h.Sum(nil)
}
