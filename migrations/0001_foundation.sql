-- Merchants (entities), their API keys, and the signing keys payd uses.

CREATE TABLE entities (
  id          uuid PRIMARY KEY,
  name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- An API key is shown once; only its SHA-256 is kept (keys carry 256 bits of entropy,
-- so a slow password hash adds nothing). prefix is the non-secret start, for display.
CREATE TABLE api_keys (
  id          uuid PRIMARY KEY,
  entity_id   uuid NOT NULL REFERENCES entities (id),
  key_hash    bytea NOT NULL UNIQUE,
  prefix      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_keys_entity_idx ON api_keys (entity_id);
CREATE INDEX api_keys_revoked_idx ON api_keys (revoked_at) WHERE revoked_at IS NOT NULL;

-- Asymmetric keys by purpose (redirection tokens, access tokens, ...). The private half
-- is encrypted with the master key (AES-256-GCM). The newest key not retired signs;
-- retired keys stay published for verification until expires_at.
CREATE TABLE signing_keys (
  kid              text PRIMARY KEY,
  purpose          text NOT NULL,
  alg              text NOT NULL,
  public_jwk       jsonb NOT NULL,
  private_key_enc  text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  retired_at       timestamptz,
  expires_at       timestamptz
);
CREATE INDEX signing_keys_purpose_idx ON signing_keys (purpose, created_at DESC);
