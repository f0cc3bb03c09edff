package data

import (
	"embed"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/services/kit/migrate"
	"github.com/tidemq/tide/services/kit/reconcile"
)

//go:embed migrations/*.sql
var migrations embed.FS

// patterns are the libraries whose tables this database keeps (txmsg, idempotent, reconcile):
// their own migrations create and change those tables, before this
// service's migrations run.
var patterns = []migrate.Pattern{{Name: "txmsg", FS: txmsg.Migrations}, {Name: "idempotent", FS: idempotent.Migrations}, {Name: "reconcile", FS: reconcile.Migrations}}

// Migrate applies the patterns' migrations and then the embedded ones (schema, then seed accounts)
// that the database at dsn has not seen yet (kit/migrate.Up: safe at every
// start and from several instances at once).
func Migrate(dsn string) error { return migrate.Up(dsn, migrations, "migrations", patterns...) }
