DELETE FROM products WHERE id IN ('p-apple', 'p-pear', 'p-coffee', 'p-mug', 'p-rare');
