-- tx_fence (000002) is replaced by txmsg's fence table.
DROP TABLE IF EXISTS tx_fence;

-- Tables of the pkg/mqclient pattern packages, copied from their Schema
-- constants (txmsg.Schema, idempotent.Schema, ordered.Schema).

-- txmsg: one fence row per transactional message key. The order's local
-- transaction inserts (key, attempt, 'committed'); a check-back inserts a
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

-- idempotent: dedup records (the order consumers use its Redis fast path;
-- their durable record is order_timeline's unique event key).
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
