package data

import (
	"embed"

	"github.com/tidemq/tide/services/kit/migrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrate applies the embedded migrations (schema, then seed accounts) that the database at dsn
// has not seen yet (kit/migrate.Up: safe at every start and from several
// instances at once).
func Migrate(dsn string) error { return migrate.Up(dsn, migrations, "migrations") }
