-- Identity security (issue 14, item 10): sign-ups are throttled per IP address, like
-- sign-ins; the sign-in throttle counts failures per (account, address) as well.
CREATE TABLE idp_signups (
  id          bigserial PRIMARY KEY,
  ip          text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idp_signups_ip_idx ON idp_signups (ip, created_at);
CREATE INDEX idp_login_failures_email_ip_idx ON idp_login_failures (lower(email), ip, created_at);
-- A password change or a block ends the user's sessions and revokes their tokens.
CREATE INDEX idp_login_sessions_user_idx ON idp_login_sessions (user_id);
CREATE INDEX idp_refresh_tokens_user_idx ON idp_refresh_tokens (user_id);
CREATE INDEX idp_tokens_user_idx ON idp_tokens (user_id);
