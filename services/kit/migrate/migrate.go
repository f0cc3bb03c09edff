// Package migrate is the services' schema migration runner: versioned SQL
// files (NNNNNN_name.up.sql) embedded in each service's data package,
// applied with golang-migrate.
package migrate

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/mysql"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// Up brings the schema of the MariaDB/MySQL database named by dsn up to
// the newest migration in directory dir of fsys (an embed.FS). It is safe
// to run at every start and from several instances at once: golang-migrate
// holds a database lock (GET_LOCK) while it works. It uses its own
// connection, with multi statements enabled (a migration file holds
// several statements), and closes it before returning. A database already
// at the newest version is not an error.
func Up(dsn string, fsys fs.FS, dir string) (err error) {
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
	drv, err := mysql.WithInstance(db, &mysql.Config{})
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
