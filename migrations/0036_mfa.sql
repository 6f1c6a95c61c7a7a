-- A second factor for identity users (payd issue 40; docs/identity.md "Second factor"):
-- a TOTP authenticator (RFC 6238; the secret encrypted by the master key, the last time
-- step used kept so that a code cannot be replayed), single-use recovery codes (stored
-- hashed) and the pending sign-ins that passed the password and wait for the factor
-- (by the hash of a cookie value, short-lived, with a count of wrong codes).
CREATE TABLE idp_mfa_totp (
  user_id      uuid PRIMARY KEY REFERENCES idp_users(id) ON DELETE CASCADE,
  secret_enc   text NOT NULL,
  confirmed_at timestamptz,
  last_step    bigint NOT NULL DEFAULT 0,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE idp_mfa_recovery_codes (
  user_id    uuid NOT NULL REFERENCES idp_users(id) ON DELETE CASCADE,
  code_hash  text NOT NULL,
  used_at    timestamptz,
  PRIMARY KEY (user_id, code_hash)
);
CREATE TABLE idp_mfa_pending (
  id_hash    text PRIMARY KEY,
  user_id    uuid NOT NULL REFERENCES idp_users(id) ON DELETE CASCADE,
  failures   integer NOT NULL DEFAULT 0,
  auth_type  text NOT NULL DEFAULT 'password',  -- how the first step was made: password, social
  expires_at timestamptz NOT NULL
);
CREATE INDEX idp_mfa_pending_expires ON idp_mfa_pending (expires_at);
