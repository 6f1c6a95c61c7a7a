-- Write-path trims measured in docs/performance.md (session 5):
-- * Large JSON payloads compressed with lz4 instead of pglz where the server supports
--   it: each payment change writes its event, a 2-8 KB payment snapshot that PostgreSQL
--   compresses on insert; pglz took about 7% of PostgreSQL's time in a capture. lz4
--   compresses several times faster for a similar size. Only new values use it
--   (existing rows keep pglz and stay readable). Servers built without lz4 (and PGlite)
--   keep pglz: the statements are skipped there.
-- * payment_operations_payment_idx (payment_id, created_at) duplicated the unique
--   (payment_id, idempotency_key) index for every query payd makes (all by payment_id,
--   a handful of rows sorted in memory): one index entry fewer per operation.
-- * payments keep 30% of each page free (fillfactor 70): every operation updates its
--   payment (version), and an update that finds room on the row's page is a HOT update
--   (no new index entries, cheaper to vacuum). Full pages made the first operation on
--   each payment a non-HOT update. Captures: about 5% less PostgreSQL CPU in the bench.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
    ALTER TABLE webhook_events ALTER COLUMN data SET COMPRESSION lz4;
    ALTER TABLE payments ALTER COLUMN view SET COMPRESSION lz4;
  END IF;
END
$$;
DROP INDEX payment_operations_payment_idx;
ALTER TABLE payments SET (fillfactor = 70);
