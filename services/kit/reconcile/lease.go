package reconcile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The lease is a Redis key holding the owner's random token. Renewal and
// release check the token first, so a runner whose lease expired and was
// taken by another never extends or deletes the new owner's lease.
var (
	renewScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)
	releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)
)

type lease struct {
	rdb   redis.UniversalClient
	key   string
	token string
	ttl   time.Duration

	mu   sync.Mutex
	lost error // sticky: once lost, the run must stop
	stop chan struct{}
	done chan struct{}
}

func newToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// acquire takes the lease with SET NX PX and keeps it renewed every ttl/3
// until release. It fails with ErrLeaseHeld when another runner holds it.
func acquire(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration) (*lease, error) {
	l := &lease{rdb: rdb, key: key, token: newToken(), ttl: ttl, stop: make(chan struct{}), done: make(chan struct{})}
	ok, err := rdb.SetNX(ctx, key, l.token, ttl).Result()
	if err != nil {
		return nil, fmt.Errorf("reconcile: acquire lease %s: %w", key, err)
	}
	if !ok {
		return nil, ErrLeaseHeld
	}
	go l.keep()
	return l, nil
}

func (l *lease) keep() {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
			err := l.renew(ctx)
			cancel()
			if err != nil {
				return
			}
		}
	}
}

// renew extends the lease now; any failure marks it lost for good, since
// the key may expire before we could tell.
func (l *lease) renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	n, err := renewScript.Run(ctx, l.rdb, []string{l.key}, l.token, l.ttl.Milliseconds()).Int()
	switch {
	case err != nil:
		l.lost = fmt.Errorf("%w: renew: %w", ErrLeaseLost, err)
	case n == 0:
		l.lost = fmt.Errorf("%w: %s is no longer ours", ErrLeaseLost, l.key)
	}
	return l.lost
}

// release stops renewing and deletes the key if it is still ours.
func (l *lease) release() {
	close(l.stop)
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
	defer cancel()
	if err := releaseScript.Run(ctx, l.rdb, []string{l.key}, l.token).Err(); err != nil && !errors.Is(err, redis.Nil) {
		// The key expires on its own after ttl.
		return
	}
}
