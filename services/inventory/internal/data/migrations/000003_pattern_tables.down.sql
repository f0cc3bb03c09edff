DROP TABLE IF EXISTS reconcile_audit;
DROP TABLE IF EXISTS reconcile_discrepancies;
DROP TABLE IF EXISTS reconcile_runs;
DROP TABLE IF EXISTS tide_ordered_gaps;
DROP TABLE IF EXISTS tide_ordered_versions;
DROP TABLE IF EXISTS mq_dedup;
