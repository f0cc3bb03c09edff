-- Fence for transactional messages: the local transaction inserts
-- (tx_key, 'committed'); a check-back inserts (tx_key, 'rolled_back') with
-- INSERT IGNORE, which waits for an open local transaction and, if it wins,
-- makes that transaction fail on the duplicate key.
CREATE TABLE tx_fence (
    tx_key     VARCHAR(191) NOT NULL,
    state      VARCHAR(16)  NOT NULL,
    created_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (tx_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
