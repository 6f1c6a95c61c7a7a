-- Refresh tokens of the identity provider (scope offline_access): stored hashed, rotated
-- on every use; all tokens descended from one authorization code form a family, revoked
-- whole when a used token is presented again (reuse detection). Access tokens issued in a
-- family carry its id, so that they are revoked with it.
CREATE TABLE idp_refresh_tokens (
  token_hash  text PRIMARY KEY,
  family_id   uuid NOT NULL,
  code_hash   text,
  client_id   text NOT NULL,
  user_id     uuid NOT NULL,
  scope       text NOT NULL,
  auth_time   timestamptz NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  revoked_at  timestamptz
);
CREATE INDEX idp_refresh_tokens_family_idx ON idp_refresh_tokens (family_id);
CREATE INDEX idp_refresh_tokens_code_idx ON idp_refresh_tokens (code_hash);

ALTER TABLE idp_tokens ADD COLUMN refresh_family uuid;
CREATE INDEX idp_tokens_refresh_family_idx ON idp_tokens (refresh_family);
