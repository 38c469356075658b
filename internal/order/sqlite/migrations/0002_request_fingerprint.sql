-- The fingerprint (SHA-256, hex) of what an order's Idempotency-Key was
-- first sent with, so that the same key sent again with another product or
-- quantity is refused (422 idempotency_key_reused) rather than answered
-- with the first order. Empty (NULL) for orders without a key and for
-- orders made before this column; those are compared by product and
-- quantity, which is what the fingerprint covers.

ALTER TABLE orders ADD COLUMN request_fingerprint TEXT;
