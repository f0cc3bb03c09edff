DELETE FROM accounts WHERE user_id IN ('u-alice', 'u-bob', 'u-carol', 'u-dave', 'u-erin');
