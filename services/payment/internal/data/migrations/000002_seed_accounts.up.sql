-- Demo accounts (balances in cents), inserted once.
INSERT IGNORE INTO accounts (user_id, balance) VALUES
    ('u-alice', 1000000),
    ('u-bob',   1000000),
    ('u-carol',  500000),
    ('u-dave',     1000),
    ('u-erin',        0);
