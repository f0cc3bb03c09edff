// Package store holds what the services' data layers share about their
// database and Redis clients.
package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
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
