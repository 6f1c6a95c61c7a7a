-- Social login (issue 14): upstream OpenID Connect providers the identity provider federates
-- to, the upstream identities linked to local users, and the pending federated sign-ins
-- (state, nonce, PKCE verifier, and the authorization request to resume).

CREATE TABLE idp_upstream_providers (
  id                 text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9-]{0,39}$'),
  name               text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  issuer             text NOT NULL,
  client_id          text NOT NULL,
  client_secret_enc  text NOT NULL,              -- encrypted with the master key
  scopes             text NOT NULL DEFAULT 'openid email profile',
  created_at         timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE idp_federated_identities (
  provider_id  text NOT NULL REFERENCES idp_upstream_providers (id) ON DELETE CASCADE,
  subject      text NOT NULL,
  user_id      uuid NOT NULL REFERENCES idp_users (id) ON DELETE CASCADE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (provider_id, subject)
);
CREATE INDEX idp_federated_identities_user_idx ON idp_federated_identities (user_id);

CREATE TABLE idp_federation_states (
  state_hash     text PRIMARY KEY,               -- SHA-256 of the state sent upstream
  provider_id    text NOT NULL REFERENCES idp_upstream_providers (id) ON DELETE CASCADE,
  nonce          text NOT NULL,
  code_verifier  text NOT NULL,
  request        jsonb NOT NULL,                 -- the authorization request to resume
  expires_at     timestamptz NOT NULL,
  used_at        timestamptz
);
