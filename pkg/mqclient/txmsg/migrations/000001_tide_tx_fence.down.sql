DROP TABLE IF EXISTS tide_tx_fence;
