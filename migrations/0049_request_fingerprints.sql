-- The fingerprint of the keyed request that created a payment or one of its captures,
-- refunds and voids (platform/http/idempotency.ts, ownKey; docs/decisions.md
-- "Idempotency"): an HMAC-SHA256 of the request's method, route and raw body, written in
-- the same statement as the row, so that a keyed creation claims nothing in
-- idempotency_keys first. A later request with the same key is answered 409 with
-- same_request from it. NULL: created without a key, or before this column (the claim
-- in idempotency_keys, if any, then has it). Adding a nullable column without a default
-- rewrites nothing.
ALTER TABLE payments ADD COLUMN request_fingerprint text;
ALTER TABLE payment_operations ADD COLUMN request_fingerprint text;
