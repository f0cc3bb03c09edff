// Package migrate is the services' schema migration runner: versioned SQL
// files (NNNNNN_name.up.sql) embedded in each service's data package,
// applied with golang-migrate, after the migrations of the libraries whose
// tables the service keeps (Pattern: txmsg, idempotent, ordered,
// reconcile). Each table's DDL has one home: a pattern's table is created
// and changed by the pattern's own migration files, never by a copy in a
// service.
package migrate

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"regexp"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/mysql"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/services/kit/reconcile"
)

// Pattern is a library's own migrations, applied with a version table of
// their own, schema_migrations_<Name>, so that they version apart from the
// service's: FS holds the NNNNNN_name.up.sql/.down.sql files in its
// directory "migrations" (the Migrations embed.FS of pkg/mqclient/txmsg,
// idempotent, ordered and kit/reconcile). Their CREATE TABLE statements
// say IF NOT EXISTS, so a database whose tables an older service
// migration created takes them as they are and records the version.
type Pattern struct {
	Name string // [a-z0-9_]{1,32}: the version table's suffix
	FS   fs.FS
}

// The patterns whose tables the services keep, each under the name of its
// version table (schema_migrations_<name>): one name per pattern, the same
// in every service's database.
var (
	TxMsg      = Pattern{Name: "txmsg", FS: txmsg.Migrations}
	Idempotent = Pattern{Name: "idempotent", FS: idempotent.Migrations}
	Ordered    = Pattern{Name: "ordered", FS: ordered.Migrations}
	Reconcile  = Pattern{Name: "reconcile", FS: reconcile.Migrations}
)

// Schema is a service's database: the tables of the patterns it keeps,
// created and changed by the patterns' own migrations in the order given,
// then the service's own migrations, the files in directory "migrations"
// of Own (the data package's embed.FS of migrations/*.sql).
type Schema struct {
	Own      fs.FS
	Patterns []Pattern
}

// Up applies s to the database at dsn: Up(dsn, s.Own, "migrations",
// s.Patterns...).
func (s Schema) Up(dsn string) error { return Up(dsn, s.Own, "migrations", s.Patterns...) }

var patternName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// ErrPatternName is returned for a Pattern whose Name is not [a-z0-9_]{1,32}.
var ErrPatternName = errors.New("migrations: pattern name must be [a-z0-9_]{1,32}")

// Up brings the schema of the MariaDB/MySQL database named by dsn up to
// the newest migration of each pattern, in the order given, and then to
// the newest migration in directory dir of fsys (an embed.FS). It is safe
// to run at every start and from several instances at once: golang-migrate
// holds a database lock (GET_LOCK) while it works. It uses its own
// connection, with multi statements enabled (a migration file holds
// several statements), and closes it before returning. A database already
// at the newest version is not an error.
func Up(dsn string, fsys fs.FS, dir string, patterns ...Pattern) error {
	for _, p := range patterns {
		if !patternName.MatchString(p.Name) {
			return fmt.Errorf("%w: %q", ErrPatternName, p.Name)
		}
		if err := up(dsn, p.FS, "migrations", mysql.DefaultMigrationsTable+"_"+p.Name); err != nil {
			return fmt.Errorf("%w (pattern %s)", err, p.Name)
		}
	}
	return up(dsn, fsys, dir, mysql.DefaultMigrationsTable)
}

// up applies the migrations of dir in fsys, versioned in table.
func up(dsn string, fsys fs.FS, dir, table string) (err error) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	cfg.MultiStatements = true
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	src, err := iofs.New(fsys, dir)
	if err != nil {
		db.Close()
		return fmt.Errorf("migrations: %w", err)
	}
	drv, err := mysql.WithInstance(db, &mysql.Config{MigrationsTable: table})
	if err != nil {
		db.Close()
		return fmt.Errorf("migrations: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "mysql", drv)
	if err != nil {
		drv.Close()
		return fmt.Errorf("migrations: %w", err)
	}
	defer func() {
		serr, derr := m.Close() // closes db too
		if err == nil {
			err = errors.Join(serr, derr)
		}
	}()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrations: %w", err)
	}
	return nil
}
