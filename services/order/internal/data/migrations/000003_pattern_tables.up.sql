-- tx_fence (000002) is replaced by txmsg's fence table.
DROP TABLE IF EXISTS tx_fence;

-- The tables of the pkg/mqclient patterns (txmsg's tide_tx_fence,
-- idempotent's mq_dedup) are the patterns' own migrations, applied before
-- these (data.Migrate, kit/migrate.Pattern). Until that was so, this file
-- created copies of them; a database migrated then keeps those tables, and
-- the patterns' migrations, all IF NOT EXISTS, take them as they are.
