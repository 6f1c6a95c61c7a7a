-- A range of amounts (amount_gte, amount_lte) is the one list filter whose index does not
-- give the listing order: the page counts its matches through the index, up to 2 000,
-- and sorts them itself when they are that few (lists.repo.ts, page(), FEW_MATCHES). The
-- index now carries the listing order's columns, so that count and sort read index
-- entries only (an index-only scan), not a payment row per match.
-- docs/decisions.md, "List filters have their own indexes".
-- Cost: one index build over payments (3 to 9 s per million payments on a shared 2-core
-- machine, as 0048 measured), at the start of the payd that migrates.
DROP INDEX payments_entity_amount_idx;
CREATE INDEX payments_entity_amount_idx ON payments (entity_id, amount) INCLUDE (created_at, id);

-- The payments of an entity in an amount range, in the amount index's order, up to cap:
-- the first step of a page filtered by amounts. Its own settings make it an index scan
-- whatever the statistics estimate (they cannot tell one entity's amounts from another's,
-- and a rare amount shares a histogram bucket with common ones): a scan of the table is
-- never what a bounded read of one entity's range needs.
CREATE FUNCTION payd_amount_matches(entity uuid, low bigint, high bigint, cap integer)
  RETURNS TABLE (match_id uuid, match_created_at timestamptz)
  LANGUAGE sql STABLE PARALLEL SAFE ROWS 100
  SET enable_seqscan = off SET enable_bitmapscan = off
  AS $$
    SELECT id, created_at FROM payments
    WHERE entity_id = entity AND amount BETWEEN low AND high
    ORDER BY amount LIMIT cap
  $$;
