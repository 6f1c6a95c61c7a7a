-- Write-path trims measured in docs/performance.md (session 4):
-- * Event payloads are stored as json (the text as written) instead of jsonb: payd never
--   queries inside them, and jsonb parsed every payload (a 2-3 KB payment snapshot per
--   event) into its binary form on each insert. json keeps the key order payd wrote.
-- * payments_entity_idx (entity_id, created_at) served no query: no endpoint lists
--   payments; the unique (entity_id, idempotency_key) index covers lookups by entity and
--   the foreign key. One index entry fewer per payment.
ALTER TABLE webhook_events ALTER COLUMN data TYPE json USING data::json;
DROP INDEX payments_entity_idx;
