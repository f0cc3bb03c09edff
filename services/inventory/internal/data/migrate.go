package data

import (
	"embed"

	"github.com/tidemq/tide/services/kit/migrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// schema is this service's database: the tables of the libraries it keeps
// (idempotent, ordered, reconcile), created and changed by their own migrations, then
// the embedded ones (schema, then seed products). schema.Up applies what the database
// at dsn has not seen yet (kit/migrate: safe at every start and from
// several instances at once).
var schema = migrate.Schema{Own: migrations, Patterns: []migrate.Pattern{migrate.Idempotent, migrate.Ordered, migrate.Reconcile}}
