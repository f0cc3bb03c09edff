package idempotent

import "embed"

// Migrations holds the dedup table's versioned migrations for
// golang-migrate in its directory "migrations"
// (NNNNNN_name.up.sql/.down.sql, table DefaultTable): the one home of the
// table's DDL. Apply them with a version table of their own (as
// services/kit/migrate.Up does with a Pattern), so that a later version of
// this package that changes the table reaches every database through a
// new file here instead of a copy in each service.
//
//go:embed migrations/*.sql
var Migrations embed.FS
