-- A client session may take several payment attempts (issue 20: a declined card no longer
-- ends the checkout): at most one is in flight or authorized at a time, which the
-- session's row lock enforces (payments.service claimSession), so the unique index on
-- payments.client_session_id gives way to a plain one (attempts are counted through it).
DROP INDEX payments_client_session_idx;
CREATE INDEX payments_client_session_idx ON payments (client_session_id) WHERE client_session_id IS NOT NULL;
