package data

import (
	"testing"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/services/kit/ddl"
	"github.com/tidemq/tide/services/kit/reconcile"
)

// TestMigrationsMatchPatternSchemas fails when a pattern package's table
// (idempotent: mq_dedup; ordered: tide_ordered_versions,
// tide_ordered_gaps; reconcile: reconcile_runs, reconcile_discrepancies,
// reconcile_audit) no longer matches what the migrations create:
// migrations are history and stay as they are, so a pattern schema change
// needs a new migration that creates the table in its new form.
func TestMigrationsMatchPatternSchemas(t *testing.T) {
	if err := ddl.CheckFS(migrations, "migrations", idempotent.Schema(idempotent.DefaultTable), ordered.Schema, reconcile.Schema); err != nil {
		t.Fatal(err)
	}
}
