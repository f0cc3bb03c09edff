package data

import (
	"embed"

	"github.com/tidemq/tide/services/kit/migrate"
)

//go:embed migrations/*.sql
var migrations embed.FS

// schema is this service's database: the tables of the libraries it keeps
// (txmsg, idempotent), created and changed by their own migrations, then
// the embedded ones. schema.Up applies what the database
// at dsn has not seen yet (kit/migrate: safe at every start and from
// several instances at once).
var schema = migrate.Schema{Own: migrations, Patterns: []migrate.Pattern{migrate.TxMsg, migrate.Idempotent}}
