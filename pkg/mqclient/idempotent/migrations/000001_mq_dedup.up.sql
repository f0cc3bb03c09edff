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
