CREATE TABLE tx_fence (
    tx_key     VARCHAR(191) NOT NULL,
    state      VARCHAR(16)  NOT NULL,
    created_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (tx_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
