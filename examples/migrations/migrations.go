// Package migrations shows how a service applies the pkg/mqclient
// patterns' tables with golang-migrate: each pattern exports its own
// versioned migration files (Migrations, an embed.FS with the files in
// "migrations/"), the one home of its tables' DDL, and Up applies each
// with a version table of its own (schema_migrations_<pattern>) before
// the service's migrations, so that a release of a pattern that changes a
// table reaches the database with the upgrade, with no copy to keep in
// step. goose/ holds the same tables as one goose file, for services on
// goose (a copy, checked against the patterns by the test).
package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"

	"github.com/golang-migrate/migrate/v4"
	migratemysql "github.com/golang-migrate/migrate/v4/database/mysql"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
)

// Patterns are the patterns' migrations by name (keep those you use).
var Patterns = []struct {
	Name string
	FS   fs.FS
}{{"txmsg", txmsg.Migrations}, {"idempotent", idempotent.Migrations}, {"ordered", ordered.Migrations}}

// Up applies every pattern's migrations to db (MySQL/MariaDB; a DSN with
// multiStatements=true), each versioned in schema_migrations_<name>.
// Apply your own migrations after it. A database already up to date is
// not an error.
func Up(db *sql.DB) error {
	for _, p := range Patterns {
		if err := run(db, p.Name, p.FS, (*migrate.Migrate).Up); err != nil {
			return err
		}
	}
	return nil
}

// run runs step (Up or Down) on fsys's migrations versioned in
// schema_migrations_<name> over a connection of db that it closes.
func run(db *sql.DB, name string, fsys fs.FS, step func(*migrate.Migrate) error) error {
	m, err := instance(db, name, fsys)
	if err != nil {
		return err
	}
	err = step(m)
	if errors.Is(err, migrate.ErrNoChange) {
		err = nil
	}
	srcErr, dbErr := m.Close() // closes the connection, not db
	if err = errors.Join(err, srcErr, dbErr); err != nil {
		return fmt.Errorf("migrations %s: %w", name, err)
	}
	return nil
}

// instance is golang-migrate over fsys's "migrations" directory with the
// version table schema_migrations_<name> on db (db stays open).
func instance(db *sql.DB, name string, fsys fs.FS) (*migrate.Migrate, error) {
	src, err := iofs.New(fsys, "migrations")
	if err != nil {
		return nil, fmt.Errorf("migrations %s: %w", name, err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		return nil, fmt.Errorf("migrations %s: %w", name, err)
	}
	drv, err := migratemysql.WithConnection(context.Background(), conn, &migratemysql.Config{MigrationsTable: "schema_migrations_" + name})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("migrations %s: %w", name, err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "mysql", drv)
	if err != nil {
		drv.Close() // closes conn
		return nil, fmt.Errorf("migrations %s: %w", name, err)
	}
	return m, nil
}
