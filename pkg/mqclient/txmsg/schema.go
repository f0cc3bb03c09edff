package txmsg

import (
	"context"
	_ "embed" // Schema
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// DefaultTable is the default fence table name.
const DefaultTable = "tide_tx_fence"

// Schema is the DDL of the fence table (named DefaultTable), read from
// the newest migration file in Migrations (the one home of the table's
// DDL); call Migrate, or apply Migrations with golang-migrate. One row per
// transaction key:
//
//	tx_key          the key given to Send (primary key: the fence)
//	attempt         the Send call that owns the row (random, also carried by
//	                the half message), so that a half message of a losing
//	                attempt with the same key is never committed
//	producer_group  who wrote it (diagnostics)
//	status          "committed" (written by the business transaction) or
//	                "rolled_back" (the check-back's marker)
//	created_at      database clock, for Cleanup
var Schema = strings.TrimSuffix(strings.TrimSpace(fenceUp), ";")

//go:embed migrations/000001_tide_tx_fence.up.sql
var fenceUp string

// SchemaFor returns Schema for another table name (see WithTable).
func SchemaFor(table string) (string, error) {
	if !tableName.MatchString(table) {
		return "", fmt.Errorf("%w: table name %q", ErrInvalidOption, table)
	}
	return strings.ReplaceAll(Schema, DefaultTable, table), nil
}

// Migrate creates the fence table if it does not exist (explicit DDL, no
// AutoMigrate). table is DefaultTable when empty.
func Migrate(ctx context.Context, db *gorm.DB, table string) error {
	if table == "" {
		table = DefaultTable
	}
	ddl, err := SchemaFor(table)
	if err != nil {
		return err
	}
	if err := db.WithContext(ctx).Exec(ddl).Error; err != nil {
		return fmt.Errorf("txmsg: create %s: %w", table, err)
	}
	return nil
}
