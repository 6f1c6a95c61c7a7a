-- The password grant (RFC 6749 4.3) is off unless the operator registered the application
-- with grant_types including "password" (RFC 9700: it should not be used). One row per
-- application that opted in; public clients never get one.
CREATE TABLE idp_password_grant_clients (
  client_id  text PRIMARY KEY REFERENCES idp_applications (client_id),
  created_at timestamptz NOT NULL DEFAULT now()
);
