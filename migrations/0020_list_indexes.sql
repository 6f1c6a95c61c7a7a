-- The merchant's lists (issue 18): GET /v2/payments, /v2/client-sessions and
-- /v2/payment-links read an entity's objects newest first, (created_at, id) descending,
-- a page at a time from a cursor. Each is served by an index that starts with entity_id
-- and gives that order, so a page reads limit + 1 index entries whatever the entity's
-- size; other filters narrow the same scan. Apart from the status index, none of these
-- columns changes after insert.
CREATE INDEX payments_entity_created_idx ON payments (entity_id, created_at DESC, id DESC);
-- Status filters (the refused payments of the day): a rare status must not mean reading
-- the entity's whole history in creation order. This one changes with the status, an
-- entry more on the updates that move it.
CREATE INDEX payments_entity_status_created_idx ON payments (entity_id, authorization_status, created_at DESC, id DESC);
-- The common look-up by the merchant's own order reference.
CREATE INDEX payments_entity_order_reference_idx ON payments (entity_id, order_reference) WHERE order_reference IS NOT NULL;

DROP INDEX client_sessions_entity_idx;
CREATE INDEX client_sessions_entity_created_idx ON client_sessions (entity_id, created_at DESC, id DESC);

DROP INDEX payment_links_entity_idx;
CREATE INDEX payment_links_entity_created_idx ON payment_links (entity_id, created_at DESC, id DESC);
