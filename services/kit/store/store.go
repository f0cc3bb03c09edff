// Package store holds what the services' data layers share about their
// database and Redis clients.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/durationpb"
	"gorm.io/gorm"
)

// Ping checks that the database and, unless rdb is nil, Redis answer
// (readiness); errors start with "database: " or "redis: ".
func Ping(ctx context.Context, db *gorm.DB, rdb *redis.Client) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if rdb == nil {
		return nil
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// Take reads into dest the first row q selects (gorm's Take). found is
// false, with no error, when q selects none (gorm.ErrRecordNotFound);
// any other error is returned as it is. What the repositories make of a
// missing row (a biz not-found error, or none) is theirs.
func Take(q *gorm.DB, dest any) (found bool, err error) {
	err = q.Take(dest).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return false, nil
	}
	return err == nil, err
}

// RedisConfig is what a service's configuration says about Redis: the
// generated kit/conf Data_Redis (inventory and payment use it this way)
// satisfies it.
type RedisConfig interface {
	GetAddr() string
	GetPassword() string
	GetDb() int32
	GetDialTimeout() *durationpb.Duration
	GetReadTimeout() *durationpb.Duration
	GetWriteTimeout() *durationpb.Duration
}

// NewRedis returns the Redis client c describes: dial timeout 1 s and
// read/write timeouts 500 ms unless c sets them. Context deadlines
// (idempotent.Options.RedisTimeout) bound each call, so a hung Redis
// triggers the pattern packages' fallback policy fast. The caller closes
// it.
func NewRedis(c RedisConfig) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  c.GetAddr(),
		Password:              c.GetPassword(),
		DB:                    int(c.GetDb()),
		DialTimeout:           durationOr(c.GetDialTimeout().AsDuration(), time.Second),
		ReadTimeout:           durationOr(c.GetReadTimeout().AsDuration(), 500*time.Millisecond),
		WriteTimeout:          durationOr(c.GetWriteTimeout().AsDuration(), 500*time.Millisecond),
		ContextTimeoutEnabled: true,
	})
}

// durationOr is d, or def when d is not positive.
func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
