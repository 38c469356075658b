-- The operators' product list counts each product's orders
-- (Store.Products); without this index every count reads the whole orders
-- table.

CREATE INDEX IF NOT EXISTS orders_product_id ON orders (product_id);
