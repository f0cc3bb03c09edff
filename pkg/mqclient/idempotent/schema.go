package idempotent

import (
	"context"
	_ "embed" // dedupSchema
	"fmt"
	"regexp"
	"strings"

	"gorm.io/gorm"
)

// DefaultTable is the dedup table used when Options.Table is empty.
const DefaultTable = "mq_dedup"

// Limits of the key columns, in bytes.
const (
	MaxScopeLen = 128 // group (consumer group or API scope) and handler
	MaxKeyLen   = 255 // business key
)

// Status values of a dedup record. A record is only ever written in the
// transaction of its effect, so every committed record is StatusDone.
const StatusDone = 1

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

func validTable(t string) error {
	if !tableName.MatchString(t) {
		return fmt.Errorf("%w: table name %q", ErrInvalidOptions, t)
	}
	return nil
}

// Schema returns the CREATE TABLE statement of the dedup table (shared by
// Consumer and Store), read from the newest file of Migrations, the one
// home of its DDL: apply Migrations with golang-migrate (services do it
// through services/kit/migrate) or call Migrate; the table must live in the same database as the business data, since
// the record and the effect commit in one transaction.
//
// Key columns are VARBINARY: business keys compare byte for byte (no case
// folding, no trailing-space padding). The unique key on (consumer_group,
// handler, biz_key) is the guarantee; idx_created serves Cleaner.
func Schema(table string) string {
	if table == "" {
		table = DefaultTable
	}
	return strings.ReplaceAll(dedupSchema, "`"+DefaultTable+"`", "`"+table+"`")
}

// Migrate creates the dedup table if it does not exist (Schema(table)).
// Meant for tests and tools; services apply Migrations.
func Migrate(ctx context.Context, db *gorm.DB, table string) error {
	if table == "" {
		table = DefaultTable
	}
	if err := validTable(table); err != nil {
		return err
	}
	if err := db.WithContext(ctx).Exec(Schema(table)).Error; err != nil {
		return fmt.Errorf("idempotent: create table %s: %w", table, err)
	}
	return nil
}

//go:embed migrations/000001_mq_dedup.up.sql
var dedupUp string

var dedupSchema = strings.TrimSuffix(strings.TrimSpace(dedupUp), ";")
