-- The embedded default's demo product, so that the README's session and the
-- page's ?product=tee work on a fresh start with no setup. SQLite is the
-- embedded default only (PostgreSQL has no such migration): a shop's real
-- database never gets it.
--
-- A migration runs once per file, so the product comes on the first start
-- only: an operator who changes or deletes it does not see it come back.
-- A file that already holds products (made before this migration existed)
-- is someone's shop, and is left alone.

INSERT INTO products (id, name, stock, queue)
SELECT 'tee', 'waitroom tee', 1000, ''
WHERE NOT EXISTS (SELECT 1 FROM products);
