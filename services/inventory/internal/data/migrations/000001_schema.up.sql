-- Products and their stock. available + reserved + sold is the product's
-- stock; the service only moves units between the three counters.
CREATE TABLE products (
    id         VARCHAR(64)  NOT NULL PRIMARY KEY,
    name       VARCHAR(255) NOT NULL,
    price      BIGINT       NOT NULL,
    available  BIGINT       NOT NULL DEFAULT 0,
    reserved   BIGINT       NOT NULL DEFAULT 0,
    sold       BIGINT       NOT NULL DEFAULT 0,
    updated_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
    CONSTRAINT products_nonnegative CHECK (available >= 0 AND reserved >= 0 AND sold >= 0)
) ENGINE=InnoDB;

-- One reservation per order: the durable dedup record of the order
-- events (its primary key makes Reserve happen once; status transitions
-- make Release and Sell happen once).
CREATE TABLE reservations (
    order_id   VARCHAR(64)  NOT NULL PRIMARY KEY,
    status     VARCHAR(16)  NOT NULL,
    seq        BIGINT       NOT NULL DEFAULT 0,
    reason     VARCHAR(255) NOT NULL DEFAULT '',
    created_at DATETIME(6)  NOT NULL,
    updated_at DATETIME(6)  NOT NULL,
    KEY reservations_status (status, created_at)
) ENGINE=InnoDB;

CREATE TABLE reservation_items (
    order_id   VARCHAR(64) NOT NULL,
    product_id VARCHAR(64) NOT NULL,
    quantity   BIGINT      NOT NULL,
    PRIMARY KEY (order_id, product_id)
) ENGINE=InnoDB;

-- Transactional outbox: events written in the transaction of their effect,
-- sent in id order by the relay (so per order in seq order).
CREATE TABLE outbox (
    id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    topic        VARCHAR(127) NOT NULL,
    tag          VARCHAR(64)  NOT NULL,
    sharding_key VARCHAR(64)  NOT NULL,
    seq          BIGINT       NOT NULL,
    body         BLOB         NOT NULL,
    created_at   DATETIME(6)  NOT NULL,
    sent_at      DATETIME(6)  NULL,
    KEY outbox_unsent (sent_at, id)
) ENGINE=InnoDB;
