-- User accounts and their balances in cents.
CREATE TABLE accounts (
    user_id    VARCHAR(64) NOT NULL PRIMARY KEY,
    balance    BIGINT      NOT NULL,
    updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
    CONSTRAINT accounts_nonnegative CHECK (balance >= 0)
) ENGINE=InnoDB;

-- One payment per order; its id derives from the idempotency key.
CREATE TABLE payments (
    id              VARCHAR(64)  NOT NULL PRIMARY KEY,
    order_id        VARCHAR(64)  NOT NULL,
    user_id         VARCHAR(64)  NOT NULL,
    amount          BIGINT       NOT NULL,
    status          VARCHAR(16)  NOT NULL,
    idempotency_key VARCHAR(128) NOT NULL,
    reason          VARCHAR(255) NOT NULL DEFAULT '',
    created_at      DATETIME(6)  NOT NULL,
    updated_at      DATETIME(6)  NOT NULL,
    UNIQUE KEY payments_order (order_id),
    UNIQUE KEY payments_key (idempotency_key)
) ENGINE=InnoDB;

-- API idempotency: the original response per key, written in the debit's
-- transaction (or alone for final business errors).
CREATE TABLE idempotency_keys (
    idem_key    VARCHAR(128) NOT NULL PRIMARY KEY,
    fingerprint CHAR(64)     NOT NULL,
    response    BLOB         NOT NULL,
    created_at  DATETIME(6)  NOT NULL
) ENGINE=InnoDB;

-- Orders whose OrderCancelled was consumed: the consumer's durable dedup
-- record, and the reason a later payment for the order is refused.
CREATE TABLE cancelled_orders (
    order_id   VARCHAR(64)  NOT NULL PRIMARY KEY,
    reason     VARCHAR(255) NOT NULL DEFAULT '',
    created_at DATETIME(6)  NOT NULL
) ENGINE=InnoDB;

-- The simulated external gateway's own ledger (its statement): one line
-- per capture or refund, keyed by the gateway's reference.
CREATE TABLE gateway_ledger (
    id         BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
    ref        VARCHAR(128) NOT NULL,
    payment_id VARCHAR(64) NOT NULL,
    order_id   VARCHAR(64) NOT NULL,
    kind       VARCHAR(16) NOT NULL,
    amount     BIGINT      NOT NULL,
    created_at DATETIME(6) NOT NULL,
    UNIQUE KEY gateway_ledger_ref (ref),
    KEY gateway_ledger_payment (payment_id)
) ENGINE=InnoDB;
