-- The sign-in session a code was issued from (sha-256 of the session cookie, as
-- idp_login_sessions.id). The console binds its own cookie to it, so that a sign-out at the
-- provider (or a password change, a block) ends the console session too. No foreign key:
-- sessions are deleted when they end, codes are kept for replay detection.
ALTER TABLE idp_codes ADD COLUMN session_id text;
