package idempotent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Redis keys of one (group, handler, key), hashed so that any business key
// is a safe key and both share a cluster slot (hash tag):
//
//	<prefix>:{<sha256(group NUL handler NUL key)[:16] hex>}:claim   token, PX ClaimTTL
//	<prefix>:{<...>}:done                                           fingerprint hex, PX DoneTTL
type redisKeys struct{ claim, done string }

func keysFor(prefix, group, handler, key string) redisKeys {
	h := sha256.Sum256([]byte(group + "\x00" + handler + "\x00" + key))
	base := prefix + ":{" + hex.EncodeToString(h[:16]) + "}:"
	return redisKeys{claim: base + "claim", done: base + "done"}
}

// begin: if done exists return {1, done}; else SET claim NX PX and return
// {2, ""} when taken, {3, ""} when another delivery holds it.
var beginScript = redis.NewScript(`
local d = redis.call('GET', KEYS[2])
if d then return {1, d} end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2, ''} end
return {3, ''}
`)

// finish: set done (only called after the effect committed) and release
// our claim; returns 0 when the claim was no longer ours (expired).
var finishScript = redis.NewScript(`
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return 0
`)

// release: delete the claim if it is still ours.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

type beginResult int

const (
	beginDone beginResult = iota + 1
	beginClaimed
	beginBusy
)

func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (c *Consumer) redisCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.opts.RedisTimeout > 0 {
		return context.WithTimeout(ctx, c.opts.RedisTimeout)
	}
	return ctx, func() {}
}

// ctxTimeouts reports whether rdb's commands honour their context's
// deadline. go-redis ignores it unless ContextTimeoutEnabled is set and
// then waits for its own read timeout (3 s by default, per attempt).
func ctxTimeouts(rdb redis.UniversalClient) bool {
	switch r := rdb.(type) {
	case *redis.Client:
		return r.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return r.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return r.Options().ContextTimeoutEnabled
	}
	return false
}

// call runs one Redis call bounded by RedisTimeout (and ctx). When the
// client does not honour context deadlines, the call runs in a goroutine
// that is abandoned at the deadline: it ends at the client's own timeout,
// holding one pool connection until then. An abandoned call may still
// reach Redis (a claim then lives until ClaimTTL, as after a crash).
func (c *Consumer) call(ctx context.Context, f func(context.Context) error) error {
	rctx, cancel := c.redisCtx(ctx)
	defer cancel()
	if c.ctxTimeouts {
		return f(rctx)
	}
	done := make(chan error, 1)
	go func() { done <- f(rctx) }()
	select {
	case err := <-done:
		return err
	case <-rctx.Done():
		return fmt.Errorf("idempotent: redis call abandoned: %w", rctx.Err())
	}
}

func (c *Consumer) begin(ctx context.Context, k redisKeys, token string) (beginResult, string, error) {
	var v []any
	err := c.call(ctx, func(ctx context.Context) (err error) {
		v, err = beginScript.Run(ctx, c.rdb, []string{k.claim, k.done}, token, c.opts.ClaimTTL.Milliseconds()).Slice()
		return err
	})
	if err != nil {
		return 0, "", err
	}
	if len(v) != 2 {
		return 0, "", fmt.Errorf("idempotent: unexpected redis reply %v", v)
	}
	code, _ := v[0].(int64)
	s, _ := v[1].(string)
	return beginResult(code), s, nil
}

// finish marks k done with fp and releases the claim; reports whether the
// claim was still ours.
func (c *Consumer) finish(ctx context.Context, k redisKeys, token, fp string) (bool, error) {
	var n int
	err := c.call(context.WithoutCancel(ctx), func(ctx context.Context) (err error) {
		n, err = finishScript.Run(ctx, c.rdb, []string{k.claim, k.done}, token, fp, c.opts.DoneTTL.Milliseconds()).Int()
		return err
	})
	return n == 1, err
}

func (c *Consumer) release(ctx context.Context, k redisKeys, token string) error {
	err := c.call(context.WithoutCancel(ctx), func(ctx context.Context) error {
		return releaseScript.Run(ctx, c.rdb, []string{k.claim}, token).Err()
	})
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// markDone sets the done marker (after a database duplicate hit, so that
// the next duplicate is answered by Redis).
func (c *Consumer) markDone(ctx context.Context, k redisKeys, fp string) error {
	return c.call(context.WithoutCancel(ctx), func(ctx context.Context) error {
		return c.rdb.Set(ctx, k.done, fp, c.opts.DoneTTL).Err()
	})
}
