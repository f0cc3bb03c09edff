package data

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/inventory/internal/conf"
)

// dedupCache is the Redis fast path of the consumers: a key per applied
// command, written after the commit, with a TTL. Losing keys (restart,
// eviction) costs only a database round trip: the reservation row decides.
type dedupCache struct {
	rdb *redis.Client
	ttl time.Duration
}

// NewDedupCache returns the Redis DedupCache.
func NewDedupCache(d *Data, c *conf.Data) biz.DedupCache {
	return &dedupCache{rdb: d.rdb, ttl: durationOr(c.GetRedis().GetDedupTtl().AsDuration(), 24*time.Hour)}
}

func (c *dedupCache) Seen(ctx context.Context, key string) (bool, error) {
	err := c.rdb.Get(ctx, key).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return err == nil, err
}

func (c *dedupCache) Mark(ctx context.Context, key string) error {
	return c.rdb.Set(ctx, key, 1, c.ttl).Err()
}
