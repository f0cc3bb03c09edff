package reconcile

import "embed"

// Migrations holds the runner tables' versioned migrations for
// golang-migrate in its directory "migrations"
// (NNNNNN_name.up.sql/.down.sql): the one home of their DDL. A service
// applies them with a version table of their own (kit/migrate.Up with a
// Pattern), so that a change of a table reaches every service's database
// through a new file here.
//
//go:embed migrations/*.sql
var Migrations embed.FS
