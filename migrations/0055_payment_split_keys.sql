-- The partner and method filters of the payment lists (issue 43, item 8) read a table of
-- their own, in listing order within the entity. 0048's GIN index on payd_split_keys(split)
-- gave no order and could not lead with entity_id: a rare key's matches of every entity
-- were fetched from the heap at random, those of this entity sorted (at 2 million payments
-- of one merchant, a gift-card part in one payment of 1000: p50 88 ms, 100 ms in the
-- database; about 1 s at 20 million). Walking the entity's listing order instead runs the
-- plpgsql function on every row walked (about 21 000 for that key's first page).
--
-- payment_split_keys has one row per distinct key of a payment's split ('partner:<name>',
-- 'method:<name>', as payd_split_keys gives them), with the payment's entity and creation
-- time: its primary key (entity_id, key, created_at, payment_id) is the listing order of
-- one key within one entity. The list joins it to payments (lists.repo.ts, splitKey): a rare
-- key's page reads its index backwards, then its few payments; a common one walks the
-- payments' own listing order (or another filter's index) and probes the key by its primary key.
--
-- Rows follow their payment, by triggers on payments (so every writer, a process of the
-- previous version during a rolling upgrade too): written in the same statement as the
-- payment's insert (one statement-level trigger, its new rows as a transition table), and
-- rewritten if split, created_at, entity_id or id is ever updated, removed with a deleted
-- payment. payd itself never updates those columns nor deletes payments (the runtime role
-- may not: docs/operations.md); an UPDATE trigger with a column list costs nothing to the
-- updates that do not name them. A key row without its payment never shows: the list reads
-- payments through the join.
--
-- The runtime role of docs/operations.md needs SELECT and INSERT on this new table: run the
-- grants block again after `payd migrate` (as that section says for every new table), or
-- creating a payment is refused.
--
-- Cost, measured on bench/lists.ts's data (2 million payments of one merchant, 200 000 of
-- another: 4.4 million keys; PostgreSQL 15, a shared 2-core machine at load average 7):
-- 18 s for the whole migration (15.1 s the backfill, 2.8 s the primary key, 0.2 s ANALYZE),
-- at the start of the payd that migrates; writes to payments wait meanwhile. The table
-- takes 374 MB and its index 343 MB there (about 160 bytes a key, two keys for most
-- payments: 15 % of payments' own 4.7 GB), where the GIN index dropped took 7 MB. Each new
-- payment writes two or three more rows and index entries, in its own statement
-- (docs/performance.md, "Creating a payment writes its split keys").

-- Writes to payments wait from here to the migration's commit: a payment committed after
-- the backfill read the table and before the triggers existed would have no keys.
LOCK TABLE payments IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE payment_split_keys (
  entity_id  uuid NOT NULL,
  key        text NOT NULL,
  created_at timestamptz NOT NULL,
  payment_id uuid NOT NULL
);

-- A payment's distinct keys (a split may name a partner or method twice).
CREATE FUNCTION payd_split_keys_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO payment_split_keys (entity_id, key, created_at, payment_id)
    SELECT n.entity_id, k.key, n.created_at, n.id
    FROM payd_new_payments n, LATERAL (SELECT DISTINCT key FROM unnest(payd_split_keys(n.split)) AS key) k;
  RETURN NULL;
END $$;

CREATE FUNCTION payd_split_keys_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM payment_split_keys
    WHERE entity_id = OLD.entity_id AND key = ANY (payd_split_keys(OLD.split)) AND created_at = OLD.created_at AND payment_id = OLD.id;
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO payment_split_keys (entity_id, key, created_at, payment_id)
      SELECT DISTINCT NEW.entity_id, key, NEW.created_at, NEW.id FROM unnest(payd_split_keys(NEW.split)) AS key;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER payments_split_keys_insert AFTER INSERT ON payments
  REFERENCING NEW TABLE AS payd_new_payments FOR EACH STATEMENT EXECUTE FUNCTION payd_split_keys_insert();
CREATE TRIGGER payments_split_keys_update AFTER UPDATE OF id, entity_id, split, created_at ON payments
  FOR EACH ROW EXECUTE FUNCTION payd_split_keys_change();
CREATE TRIGGER payments_split_keys_delete AFTER DELETE ON payments
  FOR EACH ROW EXECUTE FUNCTION payd_split_keys_change();

-- The payments already there (before the primary key: one index build, not an insert per entry).
INSERT INTO payment_split_keys (entity_id, key, created_at, payment_id)
  SELECT p.entity_id, k.key, p.created_at, p.id
  FROM payments p, LATERAL (SELECT DISTINCT key FROM unnest(payd_split_keys(p.split)) AS key) k;
ALTER TABLE payment_split_keys ADD PRIMARY KEY (entity_id, key, created_at, payment_id);

-- Nothing else reads the GIN index (payd_split_keys stays: the triggers call it, and a
-- process of the previous version still filters with it during a rolling upgrade, then
-- without an index of its own: slower, not wrong).
DROP INDEX payments_split_keys_idx;

-- Statistics now: the first lists after the migration are planned on them.
ANALYZE payment_split_keys;
