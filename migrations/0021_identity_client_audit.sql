-- Identity security (issue 14, items 6 and 10): every change of an application's
-- redirect surface (Allowed Callback URLs, Allowed Origins, first party) and of its
-- secret is recorded with who made it; and the Management API tokens of an application
-- can be revoked (tokens issued before tokens_not_before are refused).
CREATE TABLE idp_application_audit (
  id         uuid PRIMARY KEY,
  client_id  text NOT NULL,
  actor      text NOT NULL,
  action     text NOT NULL,
  changes    jsonb NOT NULL,
  at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idp_application_audit_client_idx ON idp_application_audit (client_id, at DESC);

ALTER TABLE idp_applications ADD COLUMN tokens_not_before timestamptz;
