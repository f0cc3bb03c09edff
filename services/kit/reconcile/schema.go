package reconcile

import (
	"context"
	_ "embed" // Schema
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// Schema creates the runner's tables (MariaDB/MySQL, InnoDB); it is the
// newest file of Migrations, the one home of their DDL: apply Migrations
// (kit/migrate.Up with a Pattern) or call Migrate. Statements are separated by ";\n".
//
//	reconcile_runs           one row per run; cursor and counters are the
//	                         checkpoint; owner is the lease token of the
//	                         runner that may write it (fence).
//	reconcile_discrepancies  one row per (job, dkey): class, evidence,
//	                         lifecycle status, repair idempotency key.
//	reconcile_audit          append-only: detections, repairs, reopenings,
//	                         acknowledgements, resolutions.
var Schema = strings.TrimSuffix(strings.TrimSpace(reconcileUp), ";")

//go:embed migrations/000001_reconcile.up.sql
var reconcileUp string

// Migrate executes Schema, one statement at a time (the DSN needs no
// multiStatements). It is idempotent.
func Migrate(ctx context.Context, db *gorm.DB) error {
	for _, stmt := range strings.Split(Schema, ";\n") {
		if err := db.WithContext(ctx).Exec(stmt).Error; err != nil {
			return fmt.Errorf("reconcile: migrate: %w", err)
		}
	}
	return nil
}
