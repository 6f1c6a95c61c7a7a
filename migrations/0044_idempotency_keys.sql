-- Idempotency keys of every keyed creating request (payd issue 44; docs/decisions.md
-- "Idempotency"): one row per key per scope of an entity (`payments` for POST
-- /v2/payments, `payment:<id>` for its captures, refunds and voids, `client-sessions`,
-- `payment-links`, `webhook-secret`), claimed before the request runs, with the
-- request's fingerprint: an HMAC-SHA256 (key derived from the master key) of its method,
-- route and raw body, so that no card number is stored in clear. resource_id is what the
-- first request created, set when it has answered; completed_at null while it runs.
-- The payments' own key columns stay the authority that nothing is created twice.
CREATE TABLE idempotency_keys (
  entity_id     uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  scope         text NOT NULL,
  key           text NOT NULL,
  claim_id      uuid NOT NULL,
  fingerprint   text NOT NULL,
  resource_id   uuid,
  claimed_at    timestamptz NOT NULL DEFAULT now(),
  completed_at  timestamptz,
  PRIMARY KEY (entity_id, scope, key)
);
