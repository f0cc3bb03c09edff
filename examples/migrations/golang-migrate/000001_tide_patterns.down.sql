DROP TABLE IF EXISTS tide_ordered_gaps;
DROP TABLE IF EXISTS tide_ordered_versions;
DROP TABLE IF EXISTS mq_dedup;
DROP TABLE IF EXISTS tide_tx_fence;
