DROP TABLE IF EXISTS gateway_ledger;
DROP TABLE IF EXISTS cancelled_orders;
DROP TABLE IF EXISTS idempotency_keys;
DROP TABLE IF EXISTS payments;
DROP TABLE IF EXISTS accounts;
