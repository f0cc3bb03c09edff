package ordered

import (
	"context"
	_ "embed" // Schema
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// Schema creates the guard's tables (MySQL/MariaDB); it is the newest file
// of Migrations, the one home of their DDL: apply Migrations with
// golang-migrate (services do it through services/kit/migrate), or run
// Schema with Migrate. The version table must
// live in the same database as the data Apply changes, so that both commit
// in one transaction.
//
// tide_ordered_versions holds one row per (scope, key): the last applied
// version (0 = none yet), the SHA-256 of its body (to tell duplicates from
// conflicts) and its message id. tide_ordered_gaps holds one row per
// (scope, key, version) that arrived ahead of the expected version:
// status "blocked" (strict: refused, not applied yet), "accepted"
// (lenient: applied anyway), "resolved" (an operator called Resolve) or
// "applied" (refused while blocked, applied in order later, e.g. resent
// from the DLQ after Resolve). Only "blocked" rows need attention.
var Schema = orderedUp

//go:embed migrations/000001_tide_ordered.up.sql
var orderedUp string

// Migrate runs Schema statement by statement. It is idempotent.
func Migrate(ctx context.Context, db *gorm.DB) error {
	for _, stmt := range strings.Split(Schema, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if err := db.WithContext(ctx).Exec(stmt).Error; err != nil {
			return fmt.Errorf("ordered: migrate: %w", err)
		}
	}
	return nil
}
