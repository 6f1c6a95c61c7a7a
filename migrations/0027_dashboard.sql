-- The merchant dashboard (/dashboard): who may see and act on an entity's payments, and
-- what each dashboard user did (the payment's timeline shows it beside the operations).

CREATE TABLE dashboard_members (
  entity_id   uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  user_id     uuid NOT NULL REFERENCES idp_users (id) ON DELETE CASCADE,
  role        text NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
  invited_by  text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (entity_id, user_id)
);
CREATE INDEX dashboard_members_user_idx ON dashboard_members (user_id);

CREATE TABLE dashboard_actions (
  id               uuid PRIMARY KEY,
  entity_id        uuid NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
  user_id          uuid NOT NULL,
  user_email       text NOT NULL,
  action           text NOT NULL,
  payment_id       uuid,
  idempotency_key  text,
  amount           bigint,
  created_at       timestamptz NOT NULL DEFAULT now()
);
-- One record per action, even when the form is posted twice (the key is the form's).
CREATE UNIQUE INDEX dashboard_actions_key_idx ON dashboard_actions (entity_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX dashboard_actions_payment_idx ON dashboard_actions (payment_id, created_at);
