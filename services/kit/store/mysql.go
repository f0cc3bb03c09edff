package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// ReadCommitted returns dsn with the session isolation level set to READ
// COMMITTED on every connection. The services take every decision on rows
// read with a lock or by conditional UPDATEs, and transactions are also
// opened by the pattern packages (txmsg, idempotent), not only by their
// own InTx: REPEATABLE READ's gap locks on absent rows (reservations of
// new orders, cancellation marks, fence keys) would make concurrent
// requests deadlock. MariaDB before 11.1 names the variable tx_isolation,
// MySQL and newer MariaDB transaction_isolation: it asks the server which
// it has (bounded by 30 s). Errors start with "data: ".
func ReadCommitted(dsn string) (string, error) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("data: database source: %w", err)
	}
	probe, err := sql.Open("mysql", dsn)
	if err != nil {
		return "", fmt.Errorf("data: open database: %w", err)
	}
	defer probe.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "transaction_isolation"
	var v string
	if err := probe.QueryRowContext(ctx, "SELECT @@transaction_isolation").Scan(&v); err != nil {
		if err2 := probe.QueryRowContext(ctx, "SELECT @@tx_isolation").Scan(&v); err2 != nil {
			return "", fmt.Errorf("data: isolation level: %w", errors.Join(err, err2))
		}
		name = "tx_isolation"
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params[name] = "'READ-COMMITTED'"
	return cfg.FormatDSN(), nil
}

// Open opens a gorm pool on dsn (MariaDB/MySQL) with gorm's logging off
// and no implicit transaction around single writes; maxOpen > 0 bounds
// the pool. It returns the pool's *sql.DB too, for Close. Errors start
// with "data: ".
func Open(dsn string, maxOpen int) (*gorm.DB, *sql.DB, error) {
	db, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
	if err != nil {
		return nil, nil, fmt.Errorf("data: open database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	if maxOpen > 0 {
		sqlDB.SetMaxOpenConns(maxOpen)
	}
	return db, sqlDB, nil
}

// Closer returns a data layer's cleanup: it closes rdb, then each of
// dbs, and logs a failure as a warning on l ("data: close redis",
// "data: close database").
func Closer(l *slog.Logger, rdb *redis.Client, dbs ...*sql.DB) func() {
	return func() {
		if err := rdb.Close(); err != nil {
			l.Warn("data: close redis", "err", err)
		}
		for _, db := range dbs {
			if err := db.Close(); err != nil {
				l.Warn("data: close database", "err", err)
			}
		}
	}
}
