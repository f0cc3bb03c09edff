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
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/pkg/testenv"
)

//go:embed goose/*.sql
var files embed.FS

var tables = []string{"tide_tx_fence", "mq_dedup", "tide_ordered_versions", "tide_ordered_gaps"}

// TestMigrationsMatchPatterns: Up applies the patterns' own migrations
// with golang-migrate (up, then every pattern down, then up again) and
// the goose file applies (up, down, up) to the tables the pattern
// packages create; it fails when the goose copy drifts from a pattern.
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
	if err := Up(viaMigrate); err != nil {
		t.Fatal(err)
	}
	for _, p := range Patterns { // the down migrations work too
		if err := run(viaMigrate, p.Name, p.FS, (*migrate.Migrate).Down); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // and a second Up is a no-op
		if err := Up(viaMigrate); err != nil {
			t.Fatal(err)
		}
	}

	viaGoose := open(t, testenv.MariaDB(t).DSN)
	gooseFile, _ := files.ReadFile("goose/00001_tide_patterns.sql")
	up, down, ok := strings.Cut(strings.TrimPrefix(string(gooseFile), "-- +goose Up\n"), "-- +goose Down\n")
	if !ok {
		t.Fatal("goose/00001_tide_patterns.sql: no -- +goose Down")
	}
	if n := strings.Count(up, ") ENGINE=InnoDB;"); n != len(tables) {
		t.Errorf("the goose up migration has %d statements, want one per table (%d)", n, len(tables))
	}
	for _, script := range []string{up, down, up} { // what goose runs: up, down, up
		if _, err := viaGoose.ExecContext(ctx, script); err != nil {
			t.Fatalf("goose file: %v", err)
		}
	}

	for _, table := range tables {
		w := showCreate(t, want, table)
		for via, db := range map[string]*sql.DB{"golang-migrate (Up)": viaMigrate, "goose": viaGoose} {
			if got := showCreate(t, db, table); got != w {
				t.Errorf("%s creates %s as\n%s\nthe pattern package as\n%s", via, table, got, w)
			}
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

var autoInc = regexp.MustCompile(` AUTO_INCREMENT=\d+`)

func showCreate(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	var name, ddl string
	if err := db.QueryRow("SHOW CREATE TABLE "+table).Scan(&name, &ddl); err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	return autoInc.ReplaceAllString(ddl, "")
}
