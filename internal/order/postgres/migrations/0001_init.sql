-- Products with their stock, and the orders bought from them.
--
-- The constraints are the last line of defence behind the waiting line:
-- stock can never go below zero, an entry token buys at most one order
-- (even one resurrected by a Redis failover), and an Idempotency-Key is
-- unique per user. The Go code maps violations of the named constraints
-- to domain errors, so keep the names in step with postgres.go.

CREATE TABLE products (
    id    text   PRIMARY KEY,
    name  text   NOT NULL,
    stock bigint NOT NULL CONSTRAINT products_stock_not_negative CHECK (stock >= 0),
    queue text   NOT NULL DEFAULT ''
);

CREATE TABLE orders (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    product_id      text        NOT NULL REFERENCES products (id),
    user_id         text        NOT NULL,
    quantity        bigint      NOT NULL CONSTRAINT orders_quantity_positive CHECK (quantity > 0),
    token           text        NOT NULL CONSTRAINT orders_token_key UNIQUE,
    idempotency_key text,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX orders_user_idempotency_key
    ON orders (user_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
