-- Consent (issue 14): what a user allowed a third-party application (first_party false),
-- one row per (user, application) with the scopes granted so far (a set, kept as a JSON
-- array). A later authorization asking only for granted scopes skips the consent page.
CREATE TABLE idp_consents (
  user_id     uuid NOT NULL REFERENCES idp_users (id),
  client_id   text NOT NULL REFERENCES idp_applications (client_id),
  scopes      jsonb NOT NULL DEFAULT '[]',
  granted_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, client_id)
);
CREATE INDEX idp_consents_client_idx ON idp_consents (client_id);

-- Deleted applications (DELETE /api/v2/clients/{id}) are kept as rows with deleted_at
-- set: codes, tokens and the audit refer to them by client_id, and a deleted client id is
-- never found again (every read filters on deleted_at IS NULL).
ALTER TABLE idp_applications ADD COLUMN deleted_at timestamptz;
