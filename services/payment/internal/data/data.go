// Package data implements the biz repositories with gorm on MariaDB/MySQL
// and go-redis, the simulated payment gateway, the transactional event
// publisher (pkg/mqclient/txmsg), the API idempotency store
// (pkg/mqclient/idempotent), the order service client and the "broker"
// reconciliation job.
package data

import (
	"context"
	"errors"
	"log/slog"

	"github.com/google/wire"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/kit/store"
	"github.com/tidemq/tide/services/payment/internal/biz"
)

// ProviderSet is data providers.
var ProviderSet = wire.NewSet(NewData, NewMQClient, NewPublisher, NewAccountRepo, NewPaymentRepo, NewIdempotencyStore,
	NewGateway, NewTransaction, NewOrderReader, NewLedger, NewBrokerJob, NewRunner, NewDedup, NewCleanup,
	wire.Bind(new(biz.Gateway), new(*Gateway)), wire.Bind(new(biz.Statement), new(*Gateway)),
	wire.Bind(new(biz.Publisher), new(*Publisher)))

// Data holds the database and Redis clients. Safe for concurrent use.
type Data struct {
	db *gorm.DB
	// keys is a second pool on the same database for the API idempotency
	// store: its transaction (holding the key's record) stays open while
	// the payment's own transaction runs on db, so the two must not
	// compete for one pool's connections.
	keys *gorm.DB
	rdb  *redis.Client
	log  *slog.Logger
}

type txKey struct{}

// NewData connects to the database (running the embedded migrations when
// c.Database.Migrate is set) and to Redis. cleanup closes both.
func NewData(c *kitconf.Data, l *slog.Logger) (*Data, func(), error) {
	src := c.GetDatabase().GetSource()
	if src == "" {
		return nil, nil, errors.New("data: database source is empty")
	}
	if c.GetDatabase().GetMigrate() {
		if err := schema.Up(src); err != nil {
			return nil, nil, err
		}
	}
	dsn, err := store.ReadCommitted(src)
	if err != nil {
		return nil, nil, err
	}
	n := int(c.GetDatabase().GetMaxOpenConns())
	db, sqlDB, err := store.Open(dsn, n)
	if err != nil {
		return nil, nil, err
	}
	keys, keysDB, err := store.Open(dsn, n)
	if err != nil {
		sqlDB.Close()
		return nil, nil, err
	}
	rdb := store.NewRedis(c.GetRedis())
	return &Data{db: db, keys: keys, rdb: rdb, log: l}, store.Closer(l, rdb, keysDB, sqlDB), nil
}

// WithTx returns ctx carrying tx, so that repositories called with it
// join that transaction (the idempotent consumer's or txmsg's).
func WithTx(ctx context.Context, tx *gorm.DB) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// DB returns the transaction in ctx, or the pool, bound to ctx.
func (d *Data) DB(ctx context.Context) *gorm.DB {
	if tx, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return tx
	}
	return d.db.WithContext(ctx)
}

// Gorm returns the pool (for the pattern packages: txmsg, idempotent,
// reconcile).
func (d *Data) Gorm() *gorm.DB { return d.db }

// Redis returns the Redis client.
func (d *Data) Redis() *redis.Client { return d.rdb }

// InTx runs fn in a transaction carried by the ctx it passes to fn; a
// nested call joins the outer transaction.
func (d *Data) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return fn(ctx)
	}
	return d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return fn(WithTx(ctx, tx))
	})
}

// Ping checks the database and Redis (readiness).
func (d *Data) Ping(ctx context.Context) error { return store.Ping(ctx, d.db, d.rdb) }

// NewTransaction returns d as biz.Transaction.
func NewTransaction(d *Data) biz.Transaction { return d }
