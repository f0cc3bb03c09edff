package ordered

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Policy says what a Guard does with a version that is ahead of the next
// expected one.
type Policy int

const (
	// Strict refuses the message (retried, then dead-lettered) and records
	// a blocked gap: the key is parked until Resolve.
	Strict Policy = iota
	// Lenient applies the message, records an accepted gap and tells Apply
	// through Event.Skipped.
	Lenient
)

func (p Policy) String() string {
	if p == Lenient {
		return "lenient"
	}
	return "strict"
}

// Outcome is what a Guard did with one delivery.
type Outcome int

const (
	Applied   Outcome = iota // effect committed, version advanced
	Duplicate                // same version and body as the last applied: no effect
	Conflict                 // same version, different body: no effect
	Stale                    // older than the last applied: no effect
	Gap                      // ahead of the expected version (see Policy)
	Failed                   // Apply or the database failed: rolled back, retried
)

func (o Outcome) String() string {
	return [...]string{"applied", "duplicate", "conflict", "stale", "gap", "failed"}[o]
}

// Event is what Apply gets.
type Event struct {
	Key     string
	Version int64
	// Skipped counts the versions missing before this one (Lenient only;
	// 0 when the version is the expected one).
	Skipped int64
	Msg     *mqclient.MessageExt
}

// Apply performs an event's effect using only tx, the transaction that
// also advances the key's version. An error rolls both back and the
// message is retried.
type Apply func(ctx context.Context, tx *gorm.DB, ev Event) error

// Option configures a Guard.
type Option func(*Guard)

// WithPolicy sets the gap policy (default Strict).
func WithPolicy(p Policy) Option { return func(g *Guard) { g.policy = p } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(g *Guard) { g.log = l } }

// WithRegisterer registers the guard's metrics (labelled scope=…):
// tide_ordered_messages_total{outcome}, tide_ordered_gaps_total{policy},
// tide_ordered_blocked_seconds (how long a key waited, from its first
// failed or refused delivery until one of its messages went through) and
// tide_ordered_blocked_keys.
func WithRegisterer(r prometheus.Registerer) Option { return func(g *Guard) { g.reg = r } }

// OnOutcome calls f after every delivery, with the outcome (for tests and
// custom metrics). f must be fast and safe for concurrent use.
func OnOutcome(f func(ev Event, o Outcome)) Option { return func(g *Guard) { g.hook = f } }

// Stats are a Guard's counters since it was created.
type Stats struct {
	Applied, Duplicates, Conflicts, Stale, Gaps, Failures int64
	// BlockedKeys is the number of keys whose last delivery failed or was
	// refused (a gap, strict) and that did not move since.
	BlockedKeys int
}

// Guard applies ordered events of one scope exactly once and in version
// order. It is safe for concurrent use; create one per (consumer group,
// handler).
type Guard struct {
	db     *gorm.DB
	scope  string
	policy Policy
	log    *slog.Logger
	reg    prometheus.Registerer
	hook   func(Event, Outcome)

	counts [6]atomic.Int64

	mu      sync.Mutex
	blocked map[string]time.Time // key -> first failed delivery

	mOutcome *prometheus.CounterVec
	mGaps    *prometheus.CounterVec
	mBlocked prometheus.Histogram
	mKeys    prometheus.GaugeFunc
}

// New returns a Guard for scope (e.g. "inventory/order-events": the
// consumer group and handler) over db, which must hold Schema's tables.
func New(db *gorm.DB, scope string, opts ...Option) (*Guard, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil db", ErrInvalid)
	}
	if scope == "" || len(scope) > 128 {
		return nil, fmt.Errorf("%w: scope %q must have 1..128 bytes", ErrInvalid, scope)
	}
	g := &Guard{db: db, scope: scope, log: slog.Default(), blocked: map[string]time.Time{}}
	for _, o := range opts {
		o(g)
	}
	if g.policy != Strict && g.policy != Lenient {
		return nil, fmt.Errorf("%w: policy %d", ErrInvalid, g.policy)
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	labels := prometheus.Labels{"scope": scope}
	g.mOutcome = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tide_ordered_messages_total",
		Help: "Deliveries seen by the ordered guard, by outcome.", ConstLabels: labels}, []string{"outcome"})
	g.mGaps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tide_ordered_gaps_total",
		Help: "Deliveries whose version was ahead of the expected one, by policy.", ConstLabels: labels}, []string{"policy"})
	g.mBlocked = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tide_ordered_blocked_seconds",
		Help: "How long a key was blocked by failing or refused deliveries.", ConstLabels: labels,
		Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)})
	g.mKeys = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tide_ordered_blocked_keys",
		Help: "Keys currently blocked.", ConstLabels: labels}, func() float64 { return float64(g.Stats().BlockedKeys) })
	if g.reg != nil {
		for _, c := range []prometheus.Collector{g.mOutcome, g.mGaps, g.mBlocked, g.mKeys} {
			if err := g.reg.Register(c); err != nil {
				return nil, fmt.Errorf("ordered: register metrics: %w", err)
			}
		}
	}
	return g, nil
}

// Stats returns the counters.
func (g *Guard) Stats() Stats {
	g.mu.Lock()
	n := len(g.blocked)
	g.mu.Unlock()
	return Stats{Applied: g.counts[Applied].Load(), Duplicates: g.counts[Duplicate].Load(),
		Conflicts: g.counts[Conflict].Load(), Stale: g.counts[Stale].Load(), Gaps: g.counts[Gap].Load(),
		Failures: g.counts[Failed].Load(), BlockedKeys: n}
}

// errRefused rolls back the transaction of a strict gap.
var errRefused = errors.New("ordered: refused")

// errMissing asks for the key's row to be created first.
var errMissing = errors.New("ordered: no version row")

// Handler returns the mqclient handler that guards apply. Subscribe it on
// an ordered consumer. It returns nil (acknowledge) for applied,
// duplicate, conflicting and stale deliveries and for lenient gaps; an
// error wrapping ErrGap for strict gaps, ErrNoVersion for unstamped
// messages, and Apply's or the database's error otherwise.
func (g *Guard) Handler(apply Apply) mqclient.Handler {
	return func(ctx context.Context, m *mqclient.MessageExt) error {
		key, ver, err := VersionOf(m)
		if err != nil {
			g.count(Event{Msg: m}, Failed)
			return err
		}
		ev := Event{Key: key, Version: ver, Msg: m}
		out, err := g.handle(ctx, g.db, &ev, apply)
		g.count(ev, out)
		g.track(key, out)
		return err
	}
}

// Effect is Handler for a caller that owns the transaction: the version
// check, the version's advance and apply run inside tx (as a savepoint),
// so they commit or roll back with the caller's own writes. Use it to
// combine the guard with pkg/mqclient/idempotent, whose Consumer.Wrap
// accepts it as its Effect (the dedup record, the version and the effect
// then commit together). Returns as Handler does; the caller must roll tx
// back on an error. A strict gap is still recorded outside tx. Outcomes
// and metrics count the guard's decisions: an "applied" that the caller
// then rolls back is counted too.
func (g *Guard) Effect(apply Apply) func(ctx context.Context, tx *gorm.DB, m *mqclient.MessageExt) error {
	return func(ctx context.Context, tx *gorm.DB, m *mqclient.MessageExt) error {
		key, ver, err := VersionOf(m)
		if err != nil {
			g.count(Event{Msg: m}, Failed)
			return err
		}
		ev := Event{Key: key, Version: ver, Msg: m}
		out, err := g.handle(ctx, tx, &ev, apply)
		g.count(ev, out)
		g.track(key, out)
		return err
	}
}

func (g *Guard) count(ev Event, o Outcome) {
	g.counts[o].Add(1)
	g.mOutcome.WithLabelValues(o.String()).Inc()
	if g.hook != nil {
		g.hook(ev, o)
	}
}

// track measures blocked time: a key is blocked from its first failed or
// refused delivery until a delivery of it goes through.
func (g *Guard) track(key string, o Outcome) {
	g.mu.Lock()
	defer g.mu.Unlock()
	since, ok := g.blocked[key]
	switch {
	case o == Failed || (o == Gap && g.policy == Strict):
		if !ok {
			g.blocked[key] = time.Now()
		}
	case ok:
		g.mBlocked.Observe(time.Since(since).Seconds())
		delete(g.blocked, key)
	}
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (g *Guard) handle(ctx context.Context, db *gorm.DB, ev *Event, apply Apply) (Outcome, error) {
	dig := digest(ev.Msg.Body)
	for attempt := 0; ; attempt++ {
		var out Outcome
		var expected int64
		err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var row struct {
				LastVersion int64
				LastDigest  string
			}
			// The row lock serialises the key even if two consumers ever
			// overlap; the row exists (errMissing below), so this takes
			// no gap lock under REPEATABLE READ.
			res := tx.Raw("SELECT last_version, last_digest FROM tide_ordered_versions WHERE scope = ? AND biz_key = ? FOR UPDATE",
				g.scope, ev.Key).Scan(&row)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				return errMissing
			}
			last := row.LastVersion
			expected = last + 1
			switch {
			case ev.Version == last && row.LastDigest == dig:
				out = Duplicate
				return nil
			case ev.Version == last:
				out = Conflict
				return nil
			case ev.Version < last:
				out = Stale
				return nil
			case ev.Version > expected:
				out = Gap
				if g.policy == Strict {
					return errRefused
				}
				ev.Skipped = ev.Version - expected
				if err := g.recordGap(tx, ev, expected, "accepted"); err != nil {
					return err
				}
			default:
				out = Applied
			}
			// Compare-and-set: only the holder of version last moves it.
			now := time.Now().UTC()
			upd := tx.Exec("UPDATE tide_ordered_versions SET last_version = ?, last_digest = ?, last_msg_id = ?, updated_at = ? "+
				"WHERE scope = ? AND biz_key = ? AND last_version = ?", ev.Version, dig, ev.Msg.MsgID, now, g.scope, ev.Key, last)
			if upd.Error != nil {
				return upd.Error
			}
			if upd.RowsAffected != 1 {
				return fmt.Errorf("ordered: key %s: version moved concurrently from %d", ev.Key, last)
			}
			// A version refused earlier (strict gap) and applied now, after
			// the missing ones arrived or were resolved: its gap row says
			// so, in the same transaction (a point update on the primary
			// key; usually no row).
			if err := tx.Exec("UPDATE tide_ordered_gaps SET status = 'applied', last_seen = ? "+
				"WHERE scope = ? AND biz_key = ? AND version = ? AND status = 'blocked'", now, g.scope, ev.Key, ev.Version).Error; err != nil {
				return err
			}
			return apply(ctx, tx, *ev)
		})
		switch {
		case errors.Is(err, errMissing) && attempt == 0:
			// Created outside the transaction: INSERT IGNORE is idempotent
			// and leaves no lock behind for other new keys to deadlock on.
			if err := db.WithContext(ctx).Exec("INSERT IGNORE INTO tide_ordered_versions "+
				"(scope, biz_key, last_version, last_digest, last_msg_id, updated_at) VALUES (?, ?, 0, '', '', ?)",
				g.scope, ev.Key, time.Now().UTC()).Error; err != nil {
				return Failed, fmt.Errorf("ordered: key %s: create version row: %w", ev.Key, err)
			}
			continue
		case errors.Is(err, errRefused):
			if rerr := g.recordGap(g.db.WithContext(ctx), ev, expected, "blocked"); rerr != nil {
				g.log.Warn("ordered: record gap", "scope", g.scope, "key", ev.Key, "err", rerr)
			}
			g.mGaps.WithLabelValues(g.policy.String()).Inc()
			g.log.Warn("ordered: version gap, message refused", "scope", g.scope, "key", ev.Key,
				"version", ev.Version, "expected", expected, "msgId", ev.Msg.MsgID, "attempt", ev.Msg.ReconsumeTimes)
			return Gap, fmt.Errorf("%w: key %s: version %d, expected %d", ErrGap, ev.Key, ev.Version, expected)
		case err != nil:
			return Failed, fmt.Errorf("ordered: key %s version %d: %w", ev.Key, ev.Version, err)
		}
		switch out {
		case Gap:
			g.mGaps.WithLabelValues(g.policy.String()).Inc()
			g.log.Warn("ordered: version gap accepted", "scope", g.scope, "key", ev.Key, "version", ev.Version, "skipped", ev.Skipped)
		case Conflict, Stale:
			g.log.Warn("ordered: event not applied", "outcome", out.String(), "scope", g.scope, "key", ev.Key,
				"version", ev.Version, "last", expected-1, "msgId", ev.Msg.MsgID)
		}
		return out, nil
	}
}

// recordGap upserts the gap record of ev.
func (g *Guard) recordGap(db *gorm.DB, ev *Event, expected int64, status string) error {
	now := time.Now().UTC()
	return db.Exec("INSERT INTO tide_ordered_gaps (scope, biz_key, version, expected, msg_id, policy, status, attempts, first_seen, last_seen) "+
		"VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?) ON DUPLICATE KEY UPDATE attempts = attempts + 1, last_seen = VALUES(last_seen), "+
		"expected = VALUES(expected), status = IF(status = 'resolved', status, VALUES(status))",
		g.scope, ev.Key, ev.Version, expected, ev.Msg.MsgID, g.policy.String(), status, now, now).Error
}

// GapRecord is one row of tide_ordered_gaps.
type GapRecord struct {
	Key       string
	Version   int64 // the version that arrived
	Expected  int64 // the version that was expected then
	MsgID     string
	Policy    string
	Status    string // blocked, accepted, resolved or applied (see Schema)
	Attempts  int
	FirstSeen time.Time
	LastSeen  time.Time
}

// Gaps lists the gap records of key ("" for every key of the scope),
// oldest first.
func (g *Guard) Gaps(ctx context.Context, key string) ([]GapRecord, error) {
	q := g.db.WithContext(ctx).Table("tide_ordered_gaps").
		Select("biz_key AS `key`, version, expected, msg_id, policy, status, attempts, first_seen, last_seen").
		Where("scope = ?", g.scope)
	if key != "" {
		q = q.Where("biz_key = ?", key)
	}
	var out []GapRecord
	if err := q.Order("first_seen, biz_key, version").Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("ordered: gaps: %w", err)
	}
	return out, nil
}

// LastVersion returns the last applied version of key (0 if none).
func (g *Guard) LastVersion(ctx context.Context, key string) (int64, error) {
	var v []int64
	if err := g.db.WithContext(ctx).Raw("SELECT last_version FROM tide_ordered_versions WHERE scope = ? AND biz_key = ?",
		g.scope, key).Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("ordered: last version: %w", err)
	}
	if len(v) == 0 {
		return 0, nil
	}
	return v[0], nil
}

// Resolve is the operator's way out of a parked key: it declares versions
// up to last done (the next expected version becomes last+1) and marks the
// key's blocked gaps up to last+1 resolved. Re-send the dead-lettered
// messages afterwards, in version order; older ones are then Stale, later
// ones are applied and their blocked gap rows become "applied". It never
// lowers a key's version.
func (g *Guard) Resolve(ctx context.Context, key string, last int64) error {
	if key == "" || last < 0 {
		return fmt.Errorf("%w: key %q last %d", ErrInvalid, key, last)
	}
	now := time.Now().UTC()
	err := g.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("INSERT INTO tide_ordered_versions (scope, biz_key, last_version, last_digest, last_msg_id, updated_at) "+
			"VALUES (?, ?, ?, '', 'resolved', ?) ON DUPLICATE KEY UPDATE "+
			"last_digest = IF(last_version < VALUES(last_version), '', last_digest), "+
			"last_msg_id = IF(last_version < VALUES(last_version), 'resolved', last_msg_id), "+
			"last_version = GREATEST(last_version, VALUES(last_version)), updated_at = VALUES(updated_at)",
			g.scope, key, last, now).Error; err != nil {
			return err
		}
		return tx.Exec("UPDATE tide_ordered_gaps SET status = 'resolved', last_seen = ? WHERE scope = ? AND biz_key = ? AND version <= ? AND status = 'blocked'",
			now, g.scope, key, last+1).Error
	})
	if err != nil {
		return fmt.Errorf("ordered: resolve %s: %w", key, err)
	}
	g.log.Warn("ordered: key resolved by operator", "scope", g.scope, "key", key, "last", last)
	return nil
}
