package data

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

type idempotencyRow struct {
	IdemKey     string `gorm:"primaryKey"`
	Fingerprint string
	Response    []byte
	CreatedAt   time.Time
}

func (idempotencyRow) TableName() string { return "idempotency_keys" }

type idempotencyRepo struct{ data *Data }

// NewIdempotencyRepo returns the gorm IdempotencyRepo.
func NewIdempotencyRepo(d *Data) biz.IdempotencyRepo { return &idempotencyRepo{data: d} }

func (r *idempotencyRepo) Get(ctx context.Context, key string) (*biz.IdempotencyRecord, error) {
	var row idempotencyRow
	err := r.data.DB(ctx).Where("idem_key = ?", key).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("data: idempotency key: %w", err)
	}
	return &biz.IdempotencyRecord{Key: row.IdemKey, Fingerprint: row.Fingerprint, Response: row.Response, CreatedAt: row.CreatedAt}, nil
}

func (r *idempotencyRepo) Create(ctx context.Context, rec *biz.IdempotencyRecord) error {
	row := idempotencyRow{IdemKey: rec.Key, Fingerprint: rec.Fingerprint, Response: rec.Response, CreatedAt: rec.CreatedAt}
	err := r.data.DB(ctx).Create(&row).Error
	if _, ok := isDuplicate(err); ok {
		return biz.ErrIdempotencyInProgress.WithCause(err)
	}
	if err != nil {
		return fmt.Errorf("data: idempotency key: %w", err)
	}
	return nil
}

// idempotencyCache keeps stored responses and in-progress locks in Redis.
type idempotencyCache struct {
	rdb *redis.Client
	ttl time.Duration
}

// NewIdempotencyCache returns the Redis IdempotencyCache.
func NewIdempotencyCache(d *Data, c *conf.Data) biz.IdempotencyCache {
	return &idempotencyCache{rdb: d.rdb, ttl: durationOr(c.GetRedis().GetDedupTtl().AsDuration(), 24*time.Hour)}
}

type cachedRecord struct {
	Fingerprint string `json:"fp"`
	Response    []byte `json:"resp"`
}

func respKey(k string) string { return "payment:idem:resp:" + k }
func lockKey(k string) string { return "payment:idem:lock:" + k }

func (c *idempotencyCache) Get(ctx context.Context, key string) (*biz.IdempotencyRecord, error) {
	b, err := c.rdb.Get(ctx, respKey(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cr cachedRecord
	if err := json.Unmarshal(b, &cr); err != nil {
		return nil, nil // a bad entry is a miss: the database decides
	}
	return &biz.IdempotencyRecord{Key: key, Fingerprint: cr.Fingerprint, Response: cr.Response}, nil
}

func (c *idempotencyCache) Put(ctx context.Context, r *biz.IdempotencyRecord) error {
	b, err := json.Marshal(cachedRecord{Fingerprint: r.Fingerprint, Response: r.Response})
	if err != nil {
		return err
	}
	return c.rdb.Set(ctx, respKey(r.Key), b, c.ttl).Err()
}

func (c *idempotencyCache) Lock(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	return c.rdb.SetNX(ctx, lockKey(key), 1, ttl).Result()
}

func (c *idempotencyCache) Unlock(ctx context.Context, key string) error {
	return c.rdb.Del(ctx, lockKey(key)).Err()
}

func (c *idempotencyCache) Seen(ctx context.Context, key string) (bool, error) {
	err := c.rdb.Get(ctx, key).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return err == nil, err
}

func (c *idempotencyCache) Mark(ctx context.Context, key string) error {
	return c.rdb.Set(ctx, key, 1, c.ttl).Err()
}
