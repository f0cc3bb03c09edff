package ordered

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// Schema creates the guard's tables (MySQL/MariaDB). Copy it into the
// service's migrations, or run it with Migrate. The version table must
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
const Schema = `
CREATE TABLE IF NOT EXISTS tide_ordered_versions (
  scope        VARCHAR(128) NOT NULL,
  biz_key      VARCHAR(191) NOT NULL,
  last_version BIGINT       NOT NULL,
  last_digest  CHAR(64)     NOT NULL,
  last_msg_id  VARCHAR(128) NOT NULL,
  updated_at   DATETIME(3)  NOT NULL,
  PRIMARY KEY (scope, biz_key)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS tide_ordered_gaps (
  scope      VARCHAR(128) NOT NULL,
  biz_key    VARCHAR(191) NOT NULL,
  version    BIGINT       NOT NULL,
  expected   BIGINT       NOT NULL,
  msg_id     VARCHAR(128) NOT NULL,
  policy     VARCHAR(16)  NOT NULL,
  status     VARCHAR(16)  NOT NULL,
  attempts   INT          NOT NULL,
  first_seen DATETIME(3)  NOT NULL,
  last_seen  DATETIME(3)  NOT NULL,
  PRIMARY KEY (scope, biz_key, version)
) ENGINE=InnoDB;
`

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
