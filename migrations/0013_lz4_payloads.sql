-- Large JSON payloads compressed with lz4 instead of pglz where the server supports it
-- (docs/performance.md, session 5): each payment change writes its event, a 2-8 KB
-- payment snapshot that PostgreSQL compresses on insert; pglz took about 7% of
-- PostgreSQL's time in a capture. lz4 compresses several times faster for a similar
-- size. Only new values use it (existing rows keep pglz and stay readable). Servers
-- built without lz4 (and PGlite) keep pglz: the statement is skipped there.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
    ALTER TABLE webhook_events ALTER COLUMN data SET COMPRESSION lz4;
    ALTER TABLE payments ALTER COLUMN view SET COMPRESSION lz4;
  END IF;
END
$$;
