-- The tables of the pkg/mqclient patterns and of kit/reconcile
-- (idempotent's mq_dedup, ordered's tide_ordered_*, reconcile_*) are
-- their own migrations, applied before these (data.Migrate,
-- kit/migrate.Pattern). Until that was so, this file created copies of
-- them; a database migrated then keeps those tables, and the patterns'
-- migrations, all IF NOT EXISTS, take them as they are. The version stays,
-- as a statement that does nothing, so that databases at version 3 still
-- find their file.
DO 0;
