-- How a sign-in was made (payd issue 40; docs/identity.md "Second factor"): the
-- authentication methods (amr, RFC 8176: pwd, otp, mfa, fed...) of each sign-in session,
-- carried to the codes and refresh tokens issued from it and into their id_tokens; and
-- a merchant's team setting that its dashboard members must have signed in with a
-- second factor. Sessions from before this migration have no methods recorded, so a
-- team that requires a second factor asks them to sign in again.
ALTER TABLE idp_login_sessions ADD COLUMN amr text[] NOT NULL DEFAULT '{}';
ALTER TABLE idp_codes ADD COLUMN amr text[] NOT NULL DEFAULT '{}';
ALTER TABLE idp_refresh_tokens ADD COLUMN amr text[] NOT NULL DEFAULT '{}';
-- The login event says it too (null: not known, as for events before this migration and login-as).
ALTER TABLE idp_user_events ADD COLUMN amr text[];

CREATE TABLE dashboard_team_settings (
  entity_id              uuid PRIMARY KEY REFERENCES entities (id) ON DELETE CASCADE,
  require_second_factor  boolean NOT NULL DEFAULT false,
  updated_by             uuid REFERENCES idp_users (id) ON DELETE SET NULL,
  updated_at             timestamptz NOT NULL DEFAULT now()
);
