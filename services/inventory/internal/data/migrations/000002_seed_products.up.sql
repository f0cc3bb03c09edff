-- Demo products, inserted once (the migration runs once per database).
INSERT IGNORE INTO products (id, name, price, available) VALUES
    ('p-apple',  'Apple',            120, 1000),
    ('p-pear',   'Pear',             150, 1000),
    ('p-coffee', 'Coffee beans 1kg', 2490, 200),
    ('p-mug',    'Mug',              890,  50),
    ('p-rare',   'Limited edition', 99900,  3);
