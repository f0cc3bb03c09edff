package idempotent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

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

// renew: extend the claim if it is still ours (the holder's lease).
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
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

// keepClaim renews the claim every third of ClaimTTL until stop is called
// or the claim is no longer ours, so that a live delivery keeps its claim
// however long its effect runs, while a crashed one's claim expires within
// ClaimTTL. A failed renewal is retried at the next tick (the claim may
// then expire: the row lock still serialises, as for a lost claim).
func (c *Consumer) keepClaim(k redisKeys, token string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(c.opts.ClaimTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			var n int
			err := c.call(context.Background(), func(ctx context.Context) (err error) {
				n, err = renewScript.Run(ctx, c.rdb, []string{k.claim}, token, c.opts.ClaimTTL.Milliseconds()).Int()
				return err
			})
			if err == nil && n == 0 {
				return // expired or taken over: nothing left to renew
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// awaitClaim waits for another delivery's claim on k to end, polling with
// a backoff from 50 ms to 500 ms: a live holder finishes (done: the
// caller acknowledges), a crashed holder's claim expires within ClaimTTL
// (claimed: the caller proceeds). It gives up after ClaimTTL plus one
// RedisTimeout (busy: the holder is alive and still working, the message
// is retried later) and returns Redis errors and ctx's end as they come.
// Waiting here, inside one delivery, keeps an orphaned claim from using up
// the message's reconsume attempts and sending it to the DLQ.
func (c *Consumer) awaitClaim(ctx context.Context, k redisKeys, token string) (beginResult, string, error) {
	deadline := time.Now().Add(c.opts.ClaimTTL + c.opts.RedisTimeout)
	wait := 50 * time.Millisecond
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return beginBusy, "", ctx.Err()
		case <-t.C:
		}
		res, done, err := c.begin(ctx, k, token)
		if err != nil || res != beginBusy || time.Now().After(deadline) {
			return res, done, err
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}
