CREATE TABLE orders (
    id            CHAR(36)     NOT NULL,
    user_id       VARCHAR(64)  NOT NULL,
    status        VARCHAR(16)  NOT NULL,
    items         LONGTEXT     NOT NULL,
    total         BIGINT       NOT NULL,
    seq           BIGINT       NOT NULL,
    cancel_at     DATETIME(3)  NOT NULL,
    cancel_reason VARCHAR(64)  NOT NULL DEFAULT '',
    cancel_timer  VARCHAR(512) NOT NULL DEFAULT '',
    payment_id    VARCHAR(64)  NOT NULL DEFAULT '',
    created_at    DATETIME(3)  NOT NULL,
    updated_at    DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    KEY idx_orders_status_cancel_at (status, cancel_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- One row per event published or consumed; (order_id, topic, seq) unique
-- makes consumption idempotent.
CREATE TABLE order_timeline (
    id       BIGINT       NOT NULL AUTO_INCREMENT,
    order_id CHAR(36)     NOT NULL,
    event    VARCHAR(64)  NOT NULL,
    topic    VARCHAR(127) NOT NULL,
    seq      BIGINT       NOT NULL,
    status   VARCHAR(16)  NOT NULL,
    detail   VARCHAR(512) NOT NULL DEFAULT '',
    at       DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uk_order_timeline_event (order_id, topic, seq)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
