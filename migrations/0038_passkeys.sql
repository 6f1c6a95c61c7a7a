-- Passkeys (WebAuthn) as a second factor beside TOTP (payd issue 40; docs/identity.md
-- "Passkeys"): the user's credentials (id, COSE public key, signature counter,
-- transports, a name, when added and last used), the single-use challenges of an
-- enrolment (bound to the user) or of a second step (bound to the pending sign-in), and
-- which second factor a login event passed.
CREATE TABLE idp_passkeys (
  id            uuid PRIMARY KEY,
  user_id       uuid NOT NULL REFERENCES idp_users(id) ON DELETE CASCADE,
  credential_id text NOT NULL UNIQUE,           -- base64url, as the browser sends it
  public_key    bytea NOT NULL,                  -- COSE_Key
  counter       bigint NOT NULL DEFAULT 0,
  transports    text[] NOT NULL DEFAULT '{}',
  name          text NOT NULL,
  backed_up     boolean NOT NULL DEFAULT false,  -- a synced (multi-device) passkey
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz
);
CREATE INDEX idp_passkeys_user ON idp_passkeys (user_id);
CREATE TABLE idp_passkey_challenges (
  challenge_hash text PRIMARY KEY,               -- SHA-256 of the base64url challenge
  user_id        uuid NOT NULL REFERENCES idp_users(id) ON DELETE CASCADE,
  purpose        text NOT NULL CHECK (purpose IN ('register', 'authenticate')),
  pending_hash   text,                           -- authenticate: the idp_mfa_pending row's id_hash
  expires_at     timestamptz NOT NULL
);
CREATE INDEX idp_passkey_challenges_expires ON idp_passkey_challenges (expires_at);
ALTER TABLE idp_user_events ADD COLUMN second_factor text;  -- otp, recovery, passkey; NULL: none asked
