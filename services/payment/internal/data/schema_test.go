package data

import (
	"testing"

	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/mqclient/txmsg"
	"github.com/tidemq/tide/services/kit/ddl"
	"github.com/tidemq/tide/services/kit/reconcile"
)

// TestMigrationsMatchPatternSchemas fails when a pattern package's table
// (txmsg: tide_tx_fence; idempotent: mq_dedup; reconcile: reconcile_runs,
// reconcile_discrepancies, reconcile_audit) is not what schema.Up
// applies: the service must apply the pattern's own migrations (schema.Patterns)
// and not redefine its tables in its own.
func TestMigrationsMatchPatternSchemas(t *testing.T) {
	if err := ddl.CheckApplied(schema, txmsg.Schema, idempotent.Schema(idempotent.DefaultTable), reconcile.Schema); err != nil {
		t.Fatal(err)
	}
}
