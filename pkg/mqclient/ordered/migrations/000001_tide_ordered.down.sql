DROP TABLE IF EXISTS tide_ordered_gaps;
DROP TABLE IF EXISTS tide_ordered_versions;
