-- Rate-limit counters that every payd process on the database shares (issue 45): one row
-- per limit (scope) and key (a credential's id or hash, or a client address) for the
-- current fixed window, which ends at reset_at. Each process counts in memory and adds
-- what it counted here about once a second, in one statement for every key it saw
-- (src/platform/http/rate-limit.ts); rows whose window ended are deleted.
CREATE TABLE rate_limit_counters (
  scope     text NOT NULL,
  key       text NOT NULL,
  count     bigint NOT NULL,
  reset_at  timestamptz NOT NULL,
  PRIMARY KEY (scope, key)
);
CREATE INDEX rate_limit_counters_reset_idx ON rate_limit_counters (reset_at);
