-- The dashboard's working tools (issue 43 item 3; docs/dashboard.md).
--
-- The merchant's time zone (an IANA name, checked with Intl when saved on the Team page):
-- every date the dashboard shows, its charts' days and its date filters use it.
ALTER TABLE dashboard_team_settings ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC';

-- The request log: recent calls of the payment API by an entity's credentials (method,
-- route template, status, idempotency key, request id, time, duration; never a body or a
-- token). Each process keeps them in a bounded ring per entity and inserts them about once
-- a second in one statement (src/platform/http/request-log.ts); rows older than 7 days are
-- deleted by each process every 10 minutes. No foreign key: the insert of a batch checks
-- nothing per row (entities are never deleted at run time).
CREATE TABLE api_request_log (
  id               bigint GENERATED ALWAYS AS IDENTITY,
  entity_id        uuid NOT NULL,
  created_at       timestamptz NOT NULL,
  method           text NOT NULL,
  route            text NOT NULL,
  status           smallint NOT NULL,
  duration_ms      integer NOT NULL,
  request_id       text NOT NULL,
  idempotency_key  text,
  api_key_id       uuid
);
-- The dashboard's page: an entity's calls newest first, by keyset.
CREATE INDEX api_request_log_entity_idx ON api_request_log (entity_id, created_at DESC, id DESC);
-- The retention delete (rows are appended in about time order: a BRIN index is enough).
CREATE INDEX api_request_log_created_brin ON api_request_log USING brin (created_at);
