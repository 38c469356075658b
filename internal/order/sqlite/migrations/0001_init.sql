-- Products with their stock, and the orders bought from them.
--
-- The constraints are the last line of defence behind the waiting line:
-- stock can never go below zero, an entry token buys at most one order
-- (even one resurrected by a Redis failover), and an Idempotency-Key is
-- unique per user. SQLite names the columns, not the constraint, when a
-- unique key refuses a row; sqlite.go matches on those column names.
--
-- STRICT tables refuse values of the wrong type instead of storing them.
-- created_at holds UTC as text, fixed at microseconds like PostgreSQL's
-- timestamptz, so it sorts as text and reads back exactly.

CREATE TABLE products (
    id    TEXT    PRIMARY KEY,
    name  TEXT    NOT NULL,
    stock INTEGER NOT NULL CHECK (stock >= 0),
    queue TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE TABLE orders (
    id              INTEGER PRIMARY KEY,
    product_id      TEXT    NOT NULL REFERENCES products (id),
    user_id         TEXT    NOT NULL,
    quantity        INTEGER NOT NULL CHECK (quantity > 0),
    token           TEXT    NOT NULL UNIQUE,
    idempotency_key TEXT,
    created_at      TEXT    NOT NULL
) STRICT;

CREATE UNIQUE INDEX orders_user_idempotency_key
    ON orders (user_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
