CREATE TABLE IF NOT EXISTS idempotency_keys (
    idem_key    VARCHAR(128) NOT NULL PRIMARY KEY,
    fingerprint CHAR(64)     NOT NULL,
    response    BLOB         NOT NULL,
    created_at  DATETIME(6)  NOT NULL
) ENGINE=InnoDB;
