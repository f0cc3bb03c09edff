CREATE TABLE IF NOT EXISTS idempotency_keys (
    idem_key    VARCHAR(128) NOT NULL PRIMARY KEY,
    fingerprint CHAR(64)     NOT NULL,
    response    BLOB         NOT NULL,
    created_at  DATETIME(6)  NOT NULL
) ENGINE=InnoDB;
DROP TABLE IF EXISTS reconcile_audit;
DROP TABLE IF EXISTS reconcile_discrepancies;
DROP TABLE IF EXISTS reconcile_runs;
DROP TABLE IF EXISTS `mq_dedup`;
DROP TABLE IF EXISTS tide_tx_fence;
