CREATE TABLE IF NOT EXISTS tide_tx_fence (
  tx_key         VARCHAR(191) NOT NULL,
  attempt        CHAR(32)     NOT NULL,
  producer_group VARCHAR(255) NOT NULL,
  status         VARCHAR(16)  NOT NULL,
  created_at     DATETIME(6)  NOT NULL,
  PRIMARY KEY (tx_key),
  KEY idx_tide_tx_fence_created (created_at)
) ENGINE=InnoDB;
