-- Every list filter has an index of its own (issue 43, item 8): a page of a filtered
-- list reads about limit + 1 entries, or the few rows that match, whatever the value
-- searched (rare, absent or common) and however many payments the entity has. Before,
-- a value no payment had walked the entity's whole (entity_id, created_at) index.
-- The list statements are planned for their values (custom plans, lists.repo.ts), so
-- the planner picks, from the statistics, between walking one of these indexes in
-- listing order and reading the few matches of a rare value and sorting them.
-- docs/decisions.md, "List filters have their own indexes".
--
-- Cost: CREATE INDEX (not CONCURRENTLY: migrations run in a transaction) reads the table
-- once per index and blocks writes to it meanwhile. Measured on about 1.7 million
-- payments with as many ledger rows and events, on a shared 2-core machine under load
-- (bench/lists.ts's data): 3 to 9 s for each btree index on payments, 23 s for the GIN
-- one, 20 s for the ledger's, 14 s for the events', about 100 s for the whole migration,
-- at the start of the payd that migrates (writes to those tables wait meanwhile). Each new payment writes 8 more
-- index entries (partner_transactions: one), and an update that changes a running total
-- or the status one or two more (the payments row's updates are not HOT already:
-- updated_at is indexed by 0040).

-- How much of a whole an amount is (overview.captured / refunded / voided): NOT,
-- PARTIALLY or FULLY, as lists.routes.ts's filters name them.
CREATE FUNCTION payd_degree(part bigint, whole bigint) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE WHEN part <= 0 THEN 'NOT' WHEN part < whole THEN 'PARTIALLY' ELSE 'FULLY' END;

-- The partners and methods of a payment's split parts, as 'partner:<name>' and
-- 'method:<name>' (filters partner and method: a part with this partner / method).
-- (plpgsql: not inlined, so the index expression and the filter stay the same call.)
CREATE FUNCTION payd_split_keys(split jsonb) RETURNS text[]
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  RETURN ARRAY(
    SELECT k FROM jsonb_array_elements(split) AS part,
      LATERAL (VALUES ('partner:' || (part->>'partner')), ('method:' || (part->>'method'))) AS v(k)
    WHERE k IS NOT NULL);
END $$;

CREATE INDEX payments_entity_currency_created_idx ON payments (entity_id, currency, created_at DESC, id DESC);
CREATE INDEX payments_entity_amount_idx ON payments (entity_id, amount);
CREATE INDEX payments_entity_email_created_idx ON payments (entity_id, lower(customer->>'email'), created_at DESC, id DESC);
CREATE INDEX payments_entity_captured_created_idx ON payments (entity_id, payd_degree(total_captured, total_authorized), created_at DESC, id DESC);
CREATE INDEX payments_entity_refunded_created_idx ON payments (entity_id, payd_degree(total_refunded, total_captured), created_at DESC, id DESC);
CREATE INDEX payments_entity_voided_created_idx ON payments (entity_id, payd_degree(total_voided, total_authorized), created_at DESC, id DESC);
-- (GIN gives no order and cannot lead with entity_id: a rare value's matches of every
-- entity are read, those of this entity sorted.)
-- (fastupdate off: a read never scans a pending list of recent entries.)
CREATE INDEX payments_split_keys_idx ON payments USING gin (payd_split_keys(split)) WITH (fastupdate = off);

-- The order reference in listing order (it replaces 0020's, which was not).
DROP INDEX payments_entity_order_reference_idx;
CREATE INDEX payments_entity_order_reference_idx ON payments (entity_id, order_reference, created_at DESC, id DESC)
  WHERE order_reference IS NOT NULL;

-- card_last_four: the transactions with a card ending in these digits. Not partial: the
-- planner reads the statistics of an index expression only on a whole-table index, and a
-- common value must be known as such (then the listing order is walked instead).
CREATE INDEX partner_transactions_card_last_four_idx ON partner_transactions ((card->>'last_four_digits'), payment_id);

-- The status filters of the client session and payment link lists. CREATED (not yet
-- expired) reads the CREATED rows whose expires_at is still ahead, EXPIRED those past it.
CREATE INDEX client_sessions_entity_status_created_idx ON client_sessions (entity_id, status, created_at DESC, id DESC);
CREATE INDEX client_sessions_entity_status_expires_idx ON client_sessions (entity_id, status, expires_at);
CREATE INDEX payment_links_entity_status_created_idx ON payment_links (entity_id, status, created_at DESC, id DESC);
CREATE INDEX payment_links_entity_status_expires_idx ON payment_links (entity_id, status, expires_at);

-- The events API's type filter (and the operator's event log's).
CREATE INDEX webhook_events_entity_type_created_idx ON webhook_events (entity_id, type, created_at DESC, id DESC);
-- The operator's event log by the status of the newest delivery: the events with a
-- delivery of that status (PENDING, DELIVERED, FAILED).
CREATE INDEX webhook_deliveries_entity_status_idx ON webhook_deliveries (entity_id, status, event_id);
