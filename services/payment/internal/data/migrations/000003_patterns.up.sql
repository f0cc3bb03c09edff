-- Tables of the pkg/mqclient pattern packages (their Schema constants),
-- in the payment database so that they commit with the business rows.

-- txmsg: the fence of the transactional message's check-back.
CREATE TABLE IF NOT EXISTS tide_tx_fence (
  tx_key         VARCHAR(191) NOT NULL,
  attempt        CHAR(32)     NOT NULL,
  producer_group VARCHAR(255) NOT NULL,
  status         VARCHAR(16)  NOT NULL,
  created_at     DATETIME(6)  NOT NULL,
  PRIMARY KEY (tx_key),
  KEY idx_tide_tx_fence_created (created_at)
) ENGINE=InnoDB;

-- idempotent: consumer dedup records and API idempotency keys (with the
-- original response).
CREATE TABLE IF NOT EXISTS `mq_dedup` (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  consumer_group VARBINARY(128) NOT NULL,
  handler VARBINARY(128) NOT NULL,
  biz_key VARBINARY(255) NOT NULL,
  fingerprint BINARY(32) NOT NULL COMMENT 'SHA-256 of the canonical payload',
  status TINYINT NOT NULL DEFAULT 1 COMMENT '1 = done (committed with its effect)',
  response MEDIUMBLOB NULL COMMENT 'Store: the original response',
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_dedup (consumer_group, handler, biz_key),
  KEY idx_created (created_at)
) ENGINE=InnoDB;

-- reconcile: runs (checkpoints), discrepancies, audit log.
CREATE TABLE IF NOT EXISTS reconcile_runs (
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
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The hand-rolled API idempotency table is replaced by mq_dedup.
DROP TABLE IF EXISTS idempotency_keys;
