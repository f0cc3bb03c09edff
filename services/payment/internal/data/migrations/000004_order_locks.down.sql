DROP TABLE IF EXISTS order_locks;
