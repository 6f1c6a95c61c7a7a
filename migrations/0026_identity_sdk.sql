-- The identity SDK's wire contract (docs/identity-sdk.md): one-time authentication
-- tokens (tkn) that a password login or sign-up hands to /oauth/authorize, password
-- reset tokens, and the outbox of the mails the provider sends (development: read in the
-- console; production: also sent over SMTP).

CREATE TABLE idp_login_tokens (
  token_hash  text PRIMARY KEY,              -- SHA-256 of the tkn
  client_id   text NOT NULL REFERENCES idp_applications (client_id) ON DELETE CASCADE,
  user_id     uuid NOT NULL REFERENCES idp_users (id) ON DELETE CASCADE,
  auth_type   text NOT NULL CHECK (auth_type IN ('password', 'signup')),
  auth_time   timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX idp_login_tokens_expiry_idx ON idp_login_tokens (expires_at);

CREATE TABLE idp_password_resets (
  token_hash  text PRIMARY KEY,              -- SHA-256 of the token in the mailed link
  user_id     uuid NOT NULL REFERENCES idp_users (id) ON DELETE CASCADE,
  client_id   text REFERENCES idp_applications (client_id) ON DELETE CASCADE,
  return_to   text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX idp_password_resets_user_idx ON idp_password_resets (user_id, created_at DESC);

CREATE TABLE idp_mail_outbox (
  id          uuid PRIMARY KEY,
  to_address  text NOT NULL,
  subject     text NOT NULL,
  body        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  -- smtp: handed to the SMTP server (sent_at set); outbox: kept for the console only
  transport   text NOT NULL CHECK (transport IN ('outbox', 'smtp')),
  sent_at     timestamptz,
  error       text
);
CREATE INDEX idp_mail_outbox_created_idx ON idp_mail_outbox (created_at DESC);
