package reconcile

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// Schema creates the runner's tables (MariaDB/MySQL, InnoDB). Copy it into
// your migrations or call Migrate. Statements are separated by ";\n".
//
//	reconcile_runs           one row per run; cursor and counters are the
//	                         checkpoint; owner is the lease token of the
//	                         runner that may write it (fence).
//	reconcile_discrepancies  one row per (job, dkey): class, evidence,
//	                         lifecycle status, repair idempotency key.
//	reconcile_audit          append-only: detections, repairs, reopenings,
//	                         acknowledgements, resolutions.
const Schema = `CREATE TABLE IF NOT EXISTS reconcile_runs (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  job VARCHAR(191) NOT NULL,
  status VARCHAR(16) NOT NULL,
  owner VARCHAR(64) NOT NULL,
  as_of DATETIME(6) NOT NULL,
  next_cursor TEXT NOT NULL,
  scanned TINYINT(1) NOT NULL DEFAULT 0,
  pages INT NOT NULL DEFAULT 0,
  checked BIGINT NOT NULL DEFAULT 0,
  found BIGINT NOT NULL DEFAULT 0,
  in_flight BIGINT NOT NULL DEFAULT 0,
  repaired BIGINT NOT NULL DEFAULT 0,
  resumes INT NOT NULL DEFAULT 0,
  last_error TEXT NULL,
  started_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  finished_at DATETIME(6) NULL,
  KEY reconcile_runs_job_status (job, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE IF NOT EXISTS reconcile_discrepancies (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  job VARCHAR(191) NOT NULL,
  dkey VARCHAR(191) NOT NULL,
  class VARCHAR(32) NOT NULL,
  status VARCHAR(16) NOT NULL,
  action VARCHAR(64) NOT NULL DEFAULT '',
  evidence LONGTEXT NOT NULL,
  occurrence INT NOT NULL DEFAULT 1,
  idempotency_key VARCHAR(255) NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  first_run_id BIGINT NOT NULL,
  last_run_id BIGINT NOT NULL,
  note TEXT NULL,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY reconcile_discrepancies_job_key (job, dkey),
  KEY reconcile_discrepancies_job_status (job, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE IF NOT EXISTS reconcile_audit (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  job VARCHAR(191) NOT NULL,
  run_id BIGINT NULL,
  discrepancy_id BIGINT NULL,
  event VARCHAR(32) NOT NULL,
  actor VARCHAR(64) NOT NULL,
  detail TEXT NULL,
  created_at DATETIME(6) NOT NULL,
  KEY reconcile_audit_discrepancy (discrepancy_id),
  KEY reconcile_audit_job_created (job, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

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
