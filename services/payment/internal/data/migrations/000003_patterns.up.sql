-- The tables of the pkg/mqclient patterns and of kit/reconcile
-- (txmsg's tide_tx_fence, idempotent's mq_dedup, reconcile_*) are their
-- own migrations, applied before these (data.Migrate,
-- kit/migrate.Pattern), in the payment database so that they commit with
-- the business rows. Until that was so, this file created copies of them;
-- a database migrated then keeps those tables, and the patterns'
-- migrations, all IF NOT EXISTS, take them as they are.

-- The hand-rolled API idempotency table is replaced by mq_dedup.
DROP TABLE IF EXISTS idempotency_keys;
