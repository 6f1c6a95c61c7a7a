-- Management API clients (client credentials with management scopes) and login-as.
ALTER TABLE idp_applications ADD COLUMN management_scopes jsonb NOT NULL DEFAULT '[]';
ALTER TABLE idp_codes ADD COLUMN login_as_name text;
ALTER TABLE idp_tokens ADD COLUMN login_as_name text;
