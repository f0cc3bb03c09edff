package data

import (
	"database/sql"
	"embed"
	"errors"
	"fmt"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/mysql"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrate applies the embedded versioned migrations (schema, then seed
// accounts) that the database at dsn has not seen yet. It uses its own
// connection, closed on return. Concurrent starts are safe: golang-migrate
// holds a database lock (GET_LOCK) while it migrates.
func Migrate(dsn string) error {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("data: migrations: %w", err)
	}
	cfg.MultiStatements = true // migration files hold several statements
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return fmt.Errorf("data: migrations: %w", err)
	}
	src, err := iofs.New(migrations, "migrations")
	if err != nil {
		db.Close()
		return fmt.Errorf("data: migrations: %w", err)
	}
	drv, err := mysql.WithInstance(db, &mysql.Config{})
	if err != nil {
		db.Close()
		return fmt.Errorf("data: migrations: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "mysql", drv)
	if err != nil {
		db.Close()
		return fmt.Errorf("data: migrations: %w", err)
	}
	defer m.Close() // closes the source and db
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("data: migrate: %w", err)
	}
	return nil
}
