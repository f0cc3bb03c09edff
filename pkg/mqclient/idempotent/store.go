package idempotent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"
)

// StoreOptions configure a Store.
type StoreOptions struct {
	// Scope (the service, e.g. "payment-api") and Operation (e.g.
	// "create-payment") scope the keys, like Group and Handler do for a
	// Consumer. Both required, at most MaxScopeLen bytes.
	Scope, Operation string
	// Table is the dedup table (default DefaultTable; it may be shared
	// with Consumers).
	Table string
	// Logger gets payload mismatches (error level). Default: discard.
	Logger *slog.Logger
	// Registerer, if set, receives the metrics (labels group=Scope,
	// handler=Operation).
	Registerer prometheus.Registerer
}

// Store gives API handlers Stripe-style idempotency keys (an
// Idempotency-Key header): the first request with a key runs and its
// response is stored with the record in the same transaction; a repeated
// request with the same key and the same request fingerprint gets the
// stored response without running again. Safe for concurrent use.
type Store struct {
	db   *gorm.DB
	opts StoreOptions
	m    *metrics
}

// NewStore returns a Store keeping its records in db.
func NewStore(db *gorm.DB, opts StoreOptions) (*Store, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil database", ErrInvalidOptions)
	}
	if opts.Scope == "" || len(opts.Scope) > MaxScopeLen || opts.Operation == "" || len(opts.Operation) > MaxScopeLen {
		return nil, fmt.Errorf("%w: Scope and Operation must be 1..%d bytes", ErrInvalidOptions, MaxScopeLen)
	}
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if err := validTable(opts.Table); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("idempotent: metrics: %w", err)
	}
	return &Store{db: db, opts: opts, m: m}, nil
}

// Do runs fn at most once per key. fn gets the transaction that also
// holds the key's record; its response is stored with the record and both
// commit together. Outcomes:
//   - first request: fn runs; returns its response, replayed = false;
//   - fn failed: nothing is stored (the key stays free), fn's error is
//     returned; to make a business refusal repeatable, return it as a
//     response with a nil error instead;
//   - same key, same fingerprint, already done: the stored response,
//     replayed = true, fn does not run;
//   - same key, different fingerprint: ErrPayloadMismatch (HTTP 422);
//   - a concurrent request with the same key waits for the first one
//     (row lock) and then replays its response, or gets ErrTransient on a
//     lock wait timeout or deadlock (HTTP 409: retry).
//
// requestFingerprint identifies "the same request" (see Fingerprint); it
// is hashed with SHA-256 before it is stored.
func (s *Store) Do(ctx context.Context, key string, requestFingerprint []byte,
	fn func(tx *gorm.DB) ([]byte, error)) (response []byte, replayed bool, err error) {
	g, op := s.opts.Scope, s.opts.Operation
	if key == "" || len(key) > MaxKeyLen {
		return nil, false, fmt.Errorf("%w: idempotency key must be 1..%d bytes", ErrBadKey, MaxKeyLen)
	}
	sum := sha256.Sum256(requestFingerprint)
	fp := sum[:]
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := insertRecord(tx, s.opts.Table, g, op, key, fp); err != nil {
			return err
		}
		resp, err := fn(tx)
		if err != nil {
			return err
		}
		if resp == nil {
			resp = []byte{} // NULL would read back as "no response"
		}
		response = resp
		return tx.Exec("UPDATE `"+s.opts.Table+"` SET response = ? WHERE consumer_group = ? AND handler = ? AND biz_key = ?",
			resp, g, op, key).Error
	})
	if err == nil {
		s.m.inc(mApplied, g, op)
		return response, false, nil
	}
	if errors.Is(err, errDuplicate) {
		rec, rerr := readRecord(ctx, s.db, s.opts.Table, g, op, key)
		if rerr != nil {
			return nil, false, rerr
		}
		if !bytes.Equal(rec.fingerprint, fp) {
			s.m.inc(mMismatches, g, op)
			s.opts.Logger.Error("idempotent: idempotency key reused with a different request", "scope", g,
				"operation", op, "key", key)
			return nil, false, fmt.Errorf("%w: scope %q operation %q key %q", ErrPayloadMismatch, g, op, key)
		}
		s.m.inc(mHits, g, op, "db")
		return rec.response, true, nil
	}
	if IsTransient(err) {
		s.m.inc(mTransient, g, op)
		if !errors.Is(err, ErrTransient) {
			err = fmt.Errorf("%w: %w", ErrTransient, err)
		}
	}
	return nil, false, err
}
