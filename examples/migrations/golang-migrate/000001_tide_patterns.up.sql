-- The tables of the pkg/mqclient patterns, as their Schema constants
-- create them (txmsg.Schema, idempotent.Schema, ordered.Schema). Put them
-- in the database that holds the business tables the pattern's
-- transaction writes. Keep only the tables of the patterns you use.

-- txmsg: one fence row per transaction key. The business transaction
-- inserts (key, attempt, 'committed') first; a check-back inserts a
-- 'rolled_back' marker, which waits for an open transaction on the key.
CREATE TABLE IF NOT EXISTS tide_tx_fence (
  tx_key         VARCHAR(191) NOT NULL,
  attempt        CHAR(32)     NOT NULL,
  producer_group VARCHAR(255) NOT NULL,
  status         VARCHAR(16)  NOT NULL,
  created_at     DATETIME(6)  NOT NULL,
  PRIMARY KEY (tx_key),
  KEY idx_tide_tx_fence_created (created_at)
) ENGINE=InnoDB;

-- idempotent: one dedup record per (group, handler, business key),
-- committed with the effect (Consumer) or the response (Store).
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

-- ordered: the last applied version per (scope, key), and the gaps seen.
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
