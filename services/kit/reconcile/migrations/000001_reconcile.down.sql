DROP TABLE IF EXISTS reconcile_audit;
DROP TABLE IF EXISTS reconcile_discrepancies;
DROP TABLE IF EXISTS reconcile_runs;
