// Package migrations holds the pattern tables as migration files for
// golang-migrate (golang-migrate/) and goose (goose/). The test applies
// the golang-migrate files with golang-migrate (up, down, up) and compares
// the tables with what the pattern packages create; the goose file must
// be exactly those up and down files under goose's annotations. (goose
// itself is not run: its module would raise shared dependencies of every
// module of the workspace.)
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/golang-migrate/migrate/v4"
	migratemysql "github.com/golang-migrate/migrate/v4/database/mysql"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/pkg/testenv"
)

//go:embed golang-migrate/*.sql goose/*.sql
var files embed.FS

var tables = []string{"tide_tx_fence", "mq_dedup", "tide_ordered_versions", "tide_ordered_gaps"}

// TestMigrationsMatchPatterns fails when a pattern's table changes and the
// migration files were not updated (or a tool cannot apply them).
func TestMigrationsMatchPatterns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	want := open(t, testenv.MariaDB(t).DSN)
	gdb, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: want}), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []func() error{
		func() error { return txmsg.Migrate(ctx, gdb, "") },
		func() error { return idempotent.Migrate(ctx, gdb, "") },
		func() error { return ordered.Migrate(ctx, gdb) },
	} {
		if err := m(); err != nil {
			t.Fatal(err)
		}
	}

	viaMigrate := open(t, testenv.MariaDB(t).DSN)
	src, err := iofs.New(files, "golang-migrate")
	if err != nil {
		t.Fatal(err)
	}
	drv, err := migratemysql.WithConnection(ctx, mustConn(t, viaMigrate), &migratemysql.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "mysql", drv)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{m.Up, m.Down, m.Up} { // the down migration works too
		if err := step(); err != nil {
			t.Fatalf("golang-migrate: %v", err)
		}
	}

	up, _ := files.ReadFile("golang-migrate/000001_tide_patterns.up.sql")
	down, _ := files.ReadFile("golang-migrate/000001_tide_patterns.down.sql")
	gooseFile, _ := files.ReadFile("goose/00001_tide_patterns.sql")
	if want := "-- +goose Up\n" + string(up) + "\n-- +goose Down\n" + string(down); string(gooseFile) != want {
		t.Errorf("goose/00001_tide_patterns.sql is not the golang-migrate up and down files under -- +goose Up/Down")
	}
	if n := strings.Count(string(up), ") ENGINE=InnoDB;"); n != len(tables) {
		t.Errorf("the up migration has %d statements, want one per table (%d)", n, len(tables))
	}

	for _, table := range tables {
		w := showCreate(t, want, table)
		if got := showCreate(t, viaMigrate, table); got != w {
			t.Errorf("the migration creates %s as\n%s\nthe pattern package as\n%s", table, got, w)
		}
	}
}

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var autoInc = regexp.MustCompile(` AUTO_INCREMENT=\d+`)

func showCreate(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	var name, ddl string
	if err := db.QueryRow("SHOW CREATE TABLE "+table).Scan(&name, &ddl); err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	return autoInc.ReplaceAllString(ddl, "")
}
