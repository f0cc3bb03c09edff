-- One database per service; the services' own migrations create their tables.
CREATE DATABASE IF NOT EXISTS tide_order CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE DATABASE IF NOT EXISTS tide_payment CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE DATABASE IF NOT EXISTS tide_inventory CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
GRANT ALL ON tide_order.* TO 'tide'@'%';
GRANT ALL ON tide_payment.* TO 'tide'@'%';
GRANT ALL ON tide_inventory.* TO 'tide'@'%';
