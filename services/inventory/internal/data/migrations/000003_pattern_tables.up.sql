-- Tables of the pkg/mqclient pattern packages, copied from their Schema
-- constants: idempotent.Schema("mq_dedup"), ordered.Schema and
-- reconcile.Schema.

-- idempotent: one dedup record per (consumer group, handler, key),
-- committed with the effect.
CREATE TABLE IF NOT EXISTS mq_dedup (
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

-- ordered: the last applied version per order id, and version gaps.
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

-- reconcile: runs (checkpointed), discrepancies with evidence, audit log.
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
