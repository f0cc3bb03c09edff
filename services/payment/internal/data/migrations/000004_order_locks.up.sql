-- One row per order that a payment or a cancellation touched. The
-- payment's local transaction and the OrderCancelled handler's
-- transaction both lock it first (INSERT ... ON DUPLICATE KEY UPDATE), so
-- they serialize per order: the cancellation either commits its mark
-- before the payment looks for it (the payment is refused) or waits until
-- the payment committed (the refund that follows finds it).
CREATE TABLE IF NOT EXISTS order_locks (
    order_id  VARCHAR(64) NOT NULL PRIMARY KEY,
    locked_at DATETIME(6) NOT NULL
) ENGINE=InnoDB;
