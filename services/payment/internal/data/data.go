// Package data implements the biz repositories with gorm on MariaDB/MySQL
// and go-redis, the simulated payment gateway, and the transactional
// message publisher with its check-back.
package data

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/wire"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

// ProviderSet is data providers.
var ProviderSet = wire.NewSet(NewData, NewTxPublisher, NewAccountRepo, NewPaymentRepo, NewIdempotencyRepo,
	NewIdempotencyCache, NewGateway, NewTransaction,
	wire.Bind(new(biz.Gateway), new(*Gateway)), wire.Bind(new(biz.TxPublisher), new(*TxPublisher)))

// Data holds the database and Redis clients. Safe for concurrent use.
type Data struct {
	db  *gorm.DB
	rdb *redis.Client
	log *slog.Logger
}

type txKey struct{}

// NewData connects to the database (running the embedded migrations when
// c.Database.Migrate is set) and to Redis. cleanup closes both.
func NewData(c *conf.Data, l *slog.Logger) (*Data, func(), error) {
	if c.GetDatabase().GetSource() == "" {
		return nil, nil, errors.New("data: database source is empty")
	}
	db, err := gorm.Open(mysql.Open(c.GetDatabase().GetSource()), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("data: open database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	if n := c.GetDatabase().GetMaxOpenConns(); n > 0 {
		sqlDB.SetMaxOpenConns(int(n))
	}
	if c.GetDatabase().GetMigrate() {
		if err := Migrate(c.GetDatabase().GetSource()); err != nil {
			sqlDB.Close()
			return nil, nil, err
		}
	}
	rc := c.GetRedis()
	rdb := redis.NewClient(&redis.Options{
		Addr:         rc.GetAddr(),
		Password:     rc.GetPassword(),
		DB:           int(rc.GetDb()),
		DialTimeout:  durationOr(rc.GetDialTimeout().AsDuration(), time.Second),
		ReadTimeout:  durationOr(rc.GetReadTimeout().AsDuration(), 500*time.Millisecond),
		WriteTimeout: durationOr(rc.GetWriteTimeout().AsDuration(), 500*time.Millisecond),
	})
	d := &Data{db: db, rdb: rdb, log: l}
	cleanup := func() {
		if err := rdb.Close(); err != nil {
			l.Warn("data: close redis", "err", err)
		}
		if err := sqlDB.Close(); err != nil {
			l.Warn("data: close database", "err", err)
		}
	}
	return d, cleanup, nil
}

func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// DB returns the transaction in ctx, or the pool, bound to ctx.
func (d *Data) DB(ctx context.Context) *gorm.DB {
	if tx, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return tx
	}
	return d.db.WithContext(ctx)
}

// InTx runs fn in a transaction carried by the ctx it passes to fn; a
// nested call joins the outer transaction.
//
// Transactions run at READ COMMITTED: every decision is taken on rows read
// with a lock (SELECT … FOR UPDATE) or by conditional UPDATEs, and
// REPEATABLE READ's gap locks on absent rows (cancellation marks, order
// payments) would make concurrent payments deadlock.
func (d *Data) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return fn(ctx)
	}
	return d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return fn(context.WithValue(ctx, txKey{}, tx))
	}, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
}

// Ping checks the database and Redis (readiness).
func (d *Data) Ping(ctx context.Context) error {
	sqlDB, err := d.db.DB()
	if err != nil {
		return err
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if err := d.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// NewTransaction returns d as biz.Transaction.
func NewTransaction(d *Data) biz.Transaction { return d }

// SplitAddrs splits a NameServer list separated by ';' or ','.
func SplitAddrs(s string) []string {
	var out []string
	for _, a := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
		out = append(out, a)
	}
	return out
}
