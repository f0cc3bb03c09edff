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
