package txmsg

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// DefaultTable is the default fence table name.
const DefaultTable = "tide_tx_fence"

// Schema is the DDL of the fence table (named DefaultTable); copy it into
// your migrations, or call Migrate. One row per transaction key:
//
//	tx_key          the key given to Send (primary key: the fence)
//	attempt         the Send call that owns the row (random, also carried by
//	                the half message), so that a half message of a losing
//	                attempt with the same key is never committed
//	producer_group  who wrote it (diagnostics)
//	status          "committed" (written by the business transaction) or
//	                "rolled_back" (the check-back's marker)
//	created_at      database clock, for Cleanup
const Schema = `CREATE TABLE IF NOT EXISTS tide_tx_fence (
  tx_key         VARCHAR(191) NOT NULL,
  attempt        CHAR(32)     NOT NULL,
  producer_group VARCHAR(255) NOT NULL,
  status         VARCHAR(16)  NOT NULL,
  created_at     DATETIME(6)  NOT NULL,
  PRIMARY KEY (tx_key),
  KEY idx_tide_tx_fence_created (created_at)
) ENGINE=InnoDB`

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
