-- The identity provider: users, applications (OAuth clients), login sessions,
-- authorization codes, the tokens issued from them, login throttling and user events.

CREATE TABLE idp_users (
  id              uuid PRIMARY KEY,
  email           text NOT NULL,
  password_hash   text NOT NULL,
  given_name      text,
  family_name     text,
  email_verified  boolean NOT NULL DEFAULT false,
  blocked         boolean NOT NULL DEFAULT false,
  is_admin        boolean NOT NULL DEFAULT false,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX idp_users_email_idx ON idp_users (lower(email));

CREATE TABLE idp_applications (
  client_id                   text PRIMARY KEY,
  name                        text NOT NULL,
  -- SHA-256 of the secret (client authentication) and the secret encrypted by the master
  -- key (it signs HS256 id_tokens); null for public clients
  secret_hash                 text,
  secret_enc                  text,
  first_party                 boolean NOT NULL DEFAULT false,
  callback_urls               jsonb NOT NULL DEFAULT '[]',
  allowed_origins             jsonb NOT NULL DEFAULT '[]',
  token_endpoint_auth_method  text NOT NULL CHECK (token_endpoint_auth_method IN ('client_secret_basic', 'client_secret_post', 'none')),
  created_at                  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE idp_login_sessions (
  id          text PRIMARY KEY,           -- SHA-256 of the cookie value
  user_id     uuid NOT NULL REFERENCES idp_users (id),
  auth_time   timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);

CREATE TABLE idp_codes (
  code_hash       text PRIMARY KEY,       -- SHA-256 of the code
  client_id       text NOT NULL REFERENCES idp_applications (client_id),
  user_id         uuid NOT NULL REFERENCES idp_users (id),
  redirect_uri    text NOT NULL,
  scope           text NOT NULL,
  nonce           text,
  code_challenge  text,
  auth_time       timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  used_at         timestamptz
);

CREATE TABLE idp_tokens (
  jti         uuid PRIMARY KEY,
  code_hash   text REFERENCES idp_codes (code_hash),
  client_id   text NOT NULL,
  user_id     uuid NOT NULL,
  expires_at  timestamptz NOT NULL,
  revoked_at  timestamptz
);
CREATE INDEX idp_tokens_code_idx ON idp_tokens (code_hash);

CREATE TABLE idp_login_failures (
  id          bigserial PRIMARY KEY,
  email       text NOT NULL,
  ip          text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idp_login_failures_email_idx ON idp_login_failures (lower(email), created_at);
CREATE INDEX idp_login_failures_ip_idx ON idp_login_failures (ip, created_at);

CREATE TABLE idp_user_events (
  id                   uuid PRIMARY KEY,
  user_id              uuid NOT NULL REFERENCES idp_users (id),
  type                 text NOT NULL,
  auth_type            text NOT NULL,
  client_id            text,
  login_as_profile_id  text,
  date                 timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idp_user_events_user_idx ON idp_user_events (user_id, date DESC);
