package idempotent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
)

// Effect is the side effect of a message. It runs inside the gorm
// transaction tx that also holds the message's dedup record, and must do
// all its database work through tx (never db): the record and the effect
// commit together or not at all. Returning an error rolls both back and
// the message is retried. tx is nil for Redis-only consumers (New with a
// nil db).
type Effect func(ctx context.Context, tx *gorm.DB, m *mqclient.MessageExt) error

// Consumer makes message handlers idempotent per (group, handler, business
// key). It is safe for concurrent use and holds no per-message state; one
// Consumer serves one handler (Options.Handler), wrapped once with Wrap.
type Consumer struct {
	db  *gorm.DB
	rdb redis.UniversalClient
	// ctxTimeouts: rdb honours context deadlines itself (see call).
	ctxTimeouts bool
	opts        Options
	m           *metrics

	// test hooks: beforeCommit runs inside the transaction after the
	// effect, afterCommit after the commit and before Redis is updated.
	beforeCommit, afterCommit func(key string)
}

// New returns a Consumer that keeps dedup records in db (table
// Options.Table, see Schema) and uses rdb (may be nil) as fast path and
// in-progress claim. Pass an untyped nil, not a nil *redis.Client, for no
// Redis. A nil db makes a Redis-only consumer (no durable record: only for
// non-critical effects, and RedisPolicy must not be FailClosedDB).
func New(db *gorm.DB, rdb redis.UniversalClient, opts Options) (*Consumer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if db == nil && rdb == nil {
		return nil, fmt.Errorf("%w: need a database, Redis or both", ErrInvalidOptions)
	}
	if db == nil && opts.RedisPolicy == FailClosedDB {
		return nil, fmt.Errorf("%w: FailClosedDB needs a database", ErrInvalidOptions)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("idempotent: metrics: %w", err)
	}
	c := &Consumer{db: db, rdb: rdb, opts: opts, m: m}
	if rdb != nil {
		c.ctxTimeouts = ctxTimeouts(rdb)
	}
	return c, nil
}

// Wrap returns the mqclient.Handler that runs fn at most once per business
// key and acknowledges duplicates. It returns nil (ack) when fn committed
// now or earlier with the same payload fingerprint, and an error (retry)
// otherwise: fn's error, ErrInProgress, ErrTransient, ErrRedisUnavailable,
// ErrBadKey, or ErrPayloadMismatch (unless Options.AckMismatch).
func (c *Consumer) Wrap(fn Effect) mqclient.Handler {
	return func(ctx context.Context, m *mqclient.MessageExt) error { return c.handle(ctx, m, fn) }
}

func (c *Consumer) handle(ctx context.Context, m *mqclient.MessageExt, fn Effect) error {
	g, h := c.opts.Group, c.opts.Handler
	key, err := c.opts.Key(m)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("%w: key of message %s is empty or longer than %d bytes", ErrBadKey, m.MsgID, MaxKeyLen)
	}
	payload, err := c.opts.Payload(m)
	if err != nil {
		return fmt.Errorf("idempotent: payload of message %s: %w", m.MsgID, err)
	}
	sum := sha256.Sum256(payload)
	fp, fpHex := sum[:], hex.EncodeToString(sum[:])
	log := c.opts.Logger.With("group", g, "handler", h, "key", key, "msgId", m.MsgID)

	var (
		k       redisKeys
		token   string
		claimed bool
	)
	if c.rdb != nil {
		k, token = keysFor(c.opts.KeyPrefix, g, h, key), newToken()
		res, done, err := c.begin(ctx, k, token)
		if err == nil && res == beginBusy {
			// Another delivery holds the key: a concurrent one (it ends
			// soon) or a crashed one (its claim expires): wait here
			// rather than spend a reconsume attempt.
			c.m.inc(mClaimsLost, g, h, "busy")
			res, done, err = c.awaitClaim(ctx, k, token)
		}
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.m.inc(mFallbacks, g, h, c.opts.RedisPolicy.String())
			log.Warn("idempotent: redis failed", "policy", c.opts.RedisPolicy, "err", err)
			if c.opts.RedisPolicy == FailClosedRetry {
				return fmt.Errorf("%w: %w", ErrRedisUnavailable, err)
			}
		case res == beginDone && done == fpHex:
			c.m.inc(mHits, g, h, "redis")
			return nil
		case res == beginDone:
			// Done with another payload. With a database the record
			// decides (it reports the mismatch below).
			if c.db == nil {
				return c.mismatch(log, key, done, fpHex)
			}
		case res == beginBusy:
			return fmt.Errorf("%w: key %q (held longer than ClaimTTL %v by a live delivery)", ErrInProgress, key, c.opts.ClaimTTL)
		case res == beginClaimed:
			claimed = true
			defer c.keepClaim(k, token)()
		}
	}

	if c.db == nil {
		if err := fn(ctx, nil, m); err != nil {
			if claimed {
				c.releaseLogged(ctx, log, k, token)
			}
			return err
		}
		c.m.inc(mApplied, g, h)
		if claimed {
			c.finishLogged(ctx, log, k, token, fpHex)
		}
		return nil
	}

	err = c.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := insertRecord(tx, c.opts.Table, g, h, key, fp); err != nil {
			return err
		}
		if err := fn(ctx, tx, m); err != nil {
			return err
		}
		if c.beforeCommit != nil {
			c.beforeCommit(key)
		}
		return nil
	})
	if err == nil {
		c.m.inc(mApplied, g, h)
		if c.afterCommit != nil {
			c.afterCommit(key)
		}
		if claimed {
			c.finishLogged(ctx, log, k, token, fpHex)
		}
		return nil
	}

	if errors.Is(err, errDuplicate) {
		rec, rerr := readRecord(ctx, c.db, c.opts.Table, g, h, key)
		if rerr != nil {
			if claimed {
				c.releaseLogged(ctx, log, k, token)
			}
			if IsTransient(rerr) {
				c.m.inc(mTransient, g, h)
			}
			return rerr
		}
		if !bytes.Equal(rec.fingerprint, fp) {
			if claimed {
				c.releaseLogged(ctx, log, k, token)
			}
			return c.mismatch(log, key, hex.EncodeToString(rec.fingerprint), fpHex)
		}
		c.m.inc(mHits, g, h, "db")
		if claimed {
			c.finishLogged(ctx, log, k, token, fpHex)
		}
		return nil
	}

	if claimed {
		c.releaseLogged(ctx, log, k, token)
	}
	if IsTransient(err) {
		c.m.inc(mTransient, g, h)
		log.Warn("idempotent: transient database conflict, will retry", "err", err)
		if !errors.Is(err, ErrTransient) {
			err = fmt.Errorf("%w: %w", ErrTransient, err)
		}
	}
	return err
}

func (c *Consumer) mismatch(log *slog.Logger, key, stored, got string) error {
	c.m.inc(mMismatches, c.opts.Group, c.opts.Handler)
	log.Error("idempotent: key reused with a different payload", "storedFingerprint", stored, "fingerprint", got,
		"acked", c.opts.AckMismatch)
	if c.opts.AckMismatch {
		return nil
	}
	return fmt.Errorf("%w: group %q handler %q key %q", ErrPayloadMismatch, c.opts.Group, c.opts.Handler, key)
}

func (c *Consumer) finishLogged(ctx context.Context, log *slog.Logger, k redisKeys, token, fpHex string) {
	ok, err := c.finish(ctx, k, token, fpHex)
	switch {
	case err != nil:
		log.Warn("idempotent: redis done marker not set (the database record still holds)", "err", err)
	case !ok:
		c.m.inc(mClaimsLost, c.opts.Group, c.opts.Handler, "expired")
		log.Warn("idempotent: claim expired before the commit; raise ClaimTTL", "claimTTL", c.opts.ClaimTTL)
	}
}

func (c *Consumer) releaseLogged(ctx context.Context, log *slog.Logger, k redisKeys, token string) {
	if err := c.release(ctx, k, token); err != nil {
		log.Warn("idempotent: claim not released (it expires after ClaimTTL)", "err", err)
	}
}
