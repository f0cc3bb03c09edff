// Package data implements the biz repositories with gorm on MariaDB/MySQL
// and go-redis, and publishes events through a transactional outbox.
package data

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/google/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/inventory/internal/biz"
	"github.com/tidemq/tide/services/inventory/internal/conf"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/mq"
	"github.com/tidemq/tide/services/kit/store"
	"github.com/tidemq/tide/services/kit/telemetry"
)

// ProviderSet is data providers.
var ProviderSet = wire.NewSet(NewData, NewRegistry, NewFaults, NewMQClient, NewProducer, NewProductRepo, NewReservationRepo, NewTransaction, NewOutbox,
	NewRunner, NewRepairLog, NewOrderLookup, NewDedup, NewCleanup, wire.Bind(new(biz.ReservedLister), new(*Data)),
	wire.Bind(new(biz.EventPublisher), new(*Outbox)), wire.Bind(new(prometheus.Registerer), new(*prometheus.Registry)))

// NewRegistry returns the service's Prometheus registry (served on
// /metrics; kit/telemetry.NewRegistry).
func NewRegistry() *prometheus.Registry { return telemetry.NewRegistry() }

// Data holds the database and Redis clients. Safe for concurrent use.
type Data struct {
	db  *gorm.DB
	rdb *redis.Client
	log *slog.Logger
}

type txKey struct{}

// NewData connects to the database (running the embedded migrations when
// c.Database.Migrate is set) and to Redis. cleanup closes both.
func NewData(c *kitconf.Data, l *slog.Logger) (*Data, func(), error) {
	if c.GetDatabase().GetSource() == "" {
		return nil, nil, errors.New("data: database source is empty")
	}
	dsn, err := store.ReadCommitted(c.GetDatabase().GetSource())
	if err != nil {
		return nil, nil, err
	}
	db, sqlDB, err := store.Open(dsn, int(c.GetDatabase().GetMaxOpenConns()))
	if err != nil {
		return nil, nil, err
	}
	if c.GetDatabase().GetMigrate() {
		if err := schema.Up(c.GetDatabase().GetSource()); err != nil {
			sqlDB.Close()
			return nil, nil, err
		}
	}
	rdb := store.NewRedis(c.GetRedis())
	return &Data{db: db, rdb: rdb, log: l}, store.Closer(l, rdb, sqlDB), nil
}

// WithTx returns ctx carrying tx, so that repositories and InTx called
// with it join tx (the consumers' transaction, owned by idempotent).
func WithTx(ctx context.Context, tx *gorm.DB) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// Gorm returns the connection pool (for the pattern packages).
func (d *Data) Gorm() *gorm.DB { return d.db }

// Redis returns the Redis client.
func (d *Data) Redis() *redis.Client { return d.rdb }

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
// REPEATABLE READ's gap locks on absent reservation rows would make two
// orders reserving the same products deadlock (gap lock, then product
// lock, then the insert waiting on the other's gap lock).
func (d *Data) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return fn(ctx)
	}
	return d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return fn(context.WithValue(ctx, txKey{}, tx))
	}, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
}

// Ping checks the database and Redis (readiness).
func (d *Data) Ping(ctx context.Context) error { return store.Ping(ctx, d.db, d.rdb) }

// NewTransaction returns d as biz.Transaction.
func NewTransaction(d *Data) biz.Transaction { return d }

// NewMQClient returns the process's one mqclient.Client (kit/mq): the
// NameServers and, when messaging.access_key is set, the plain-ACL
// credentials that sign every request; with MQ_INSTANCE_NAME set
// (boot.InstanceName), a client id that stays the same across restarts.
// The outbox producer and the consumer run on it; cleanup releases it
// after they shut down.
func NewMQClient(c *conf.Messaging, l *slog.Logger) (*mqclient.Client, func(), error) {
	return mq.NewClient(c.GetNameServers(), c.GetAccessKey(), c.GetSecretKey(), l)
}

// NewProducer starts the producer the outbox relay sends with, on the
// process's client mc (kit/mq.NewProducer). cleanup shuts it down.
func NewProducer(c *conf.Messaging, mc *mqclient.Client, l *slog.Logger) (*mqclient.Producer, func(), error) {
	return mq.NewProducer(mc, c.GetProducerGroup(), 5*time.Second, l)
}
