// Package data implements the biz interfaces with gorm on MariaDB/MySQL,
// go-redis and the Tide client (pkg/mqclient): the order repository, the
// context-carried transaction, the transactional event publisher and the
// cancellation timer. Persistence structs are unexported and mapped to biz
// entities; errors are translated to biz errors.
package data

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/store"
	"github.com/tidemq/tide/services/kit/telemetry"
	"github.com/tidemq/tide/services/order/internal/biz"
)

// ProviderSet is data providers.
var ProviderSet = wire.NewSet(NewData, NewRegistry, NewFaults, NewMQClient, NewSender, NewScheduler, NewOrderRepo, NewTransaction,
	NewEventPublisher, NewCatalog, NewCancelTimer, NewDedup, NewCleanup, wire.Bind(new(prometheus.Registerer), new(*prometheus.Registry)))

// NewRegistry returns the service's Prometheus registry (served on
// /metrics; kit/telemetry.NewRegistry).
func NewRegistry() *prometheus.Registry { return telemetry.NewRegistry() }

// Data holds the service's connections. It is safe for concurrent use.
type Data struct {
	db  *gorm.DB
	rdb *redis.Client
	log *slog.Logger
}

// NewData opens the database (running the embedded migrations unless
// conf disables them) and the Redis client. cleanup closes both.
func NewData(c *kitconf.Data, l *slog.Logger) (*Data, func(), error) {
	h := l.With("module", "order/data")
	dbc := c.GetDatabase()
	if d := dbc.GetDriver(); d != "" && d != "mysql" {
		return nil, nil, fmt.Errorf("data: unsupported database driver %q (want mysql)", d)
	}
	if dbc.GetSource() == "" {
		return nil, nil, errors.New("data: database source is empty")
	}
	if dbc.Migrate == nil || dbc.GetMigrate() {
		if err := schema.Up(dbc.GetSource()); err != nil {
			return nil, nil, err
		}
	}
	db, err := gorm.Open(mysql.Open(dbc.GetSource()), &gorm.Config{
		Logger:                 gormlogger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("data: open database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	sqlDB.SetMaxOpenConns(50)
	sqlDB.SetMaxIdleConns(10)
	sqlDB.SetConnMaxLifetime(time.Hour)
	rc := c.GetRedis()
	rdb := redis.NewClient(&redis.Options{
		Network:      rc.GetNetwork(),
		Addr:         rc.GetAddr(),
		ReadTimeout:  rc.GetReadTimeout().AsDuration(),
		WriteTimeout: rc.GetWriteTimeout().AsDuration(),
		// Context deadlines (idempotent.Options.RedisTimeout) bound
		// each call, so a hung Redis triggers the fallback policy fast.
		ContextTimeoutEnabled: true,
	})
	d := &Data{db: db, rdb: rdb, log: h}
	cleanup := func() {
		if err := rdb.Close(); err != nil {
			h.Warn("close redis", "err", err)
		}
		if err := sqlDB.Close(); err != nil {
			h.Warn("close database", "err", err)
		}
	}
	return d, cleanup, nil
}

// Redis returns the Redis client (the consumers' dedup fast path).
func (d *Data) Redis() *redis.Client { return d.rdb }

// Gorm returns the database handle (the periodic cleanup of the pattern
// tables).
func (d *Data) Gorm() *gorm.DB { return d.db }

// Ready reports whether the database and Redis answer.
func (d *Data) Ready(ctx context.Context) error {
	rdb := d.rdb
	if rdb.Options().Addr == "" {
		rdb = nil
	}
	return store.Ping(ctx, d.db, rdb)
}

// NewTransaction returns d as the biz.Transaction.
func NewTransaction(d *Data) biz.Transaction { return d }
