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
// reconcile_audit) is not what schema.Up applies: the service must
// apply the pattern's own migrations (schema.Patterns) and not redefine its
// tables in its own.
func TestMigrationsMatchPatternSchemas(t *testing.T) {
	if err := ddl.CheckApplied(schema, idempotent.Schema(idempotent.DefaultTable), ordered.Schema, reconcile.Schema); err != nil {
		t.Fatal(err)
	}
}
