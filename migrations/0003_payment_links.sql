-- Payment links and the client sessions that pay them (one per attempt), plus what the
-- checkout needs: the session that is currently paying a link (at most one at a time).

CREATE TABLE payment_links (
  id                                uuid PRIMARY KEY,
  entity_id                         uuid NOT NULL REFERENCES entities (id),
  version                           integer NOT NULL DEFAULT 1,
  -- CREATED, PAID, CANCELLED; EXPIRED is read from expires_at
  status                            text NOT NULL CHECK (status IN ('CREATED', 'PAID', 'CANCELLED')),
  amount                            bigint NOT NULL CHECK (amount > 0),
  currency                          text NOT NULL,
  capture_mode                      text NOT NULL,
  shopper_redirection_url           text,
  expires_at                        timestamptz NOT NULL,
  "order"                           jsonb,
  customer                          jsonb,
  three_ds_authentication_options   jsonb,
  webhook                           jsonb,
  allow_future_usage                boolean NOT NULL DEFAULT false,
  payment_id                        uuid REFERENCES payments (id),
  -- the client session paying the link right now, and since when (a claim that expires)
  attempt_session_id                uuid REFERENCES client_sessions (id),
  attempt_started_at                timestamptz,
  cancelled_at                      timestamptz,
  paid_at                           timestamptz,
  created_at                        timestamptz NOT NULL DEFAULT now(),
  updated_at                        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payment_links_entity_idx ON payment_links (entity_id, created_at);

ALTER TABLE client_sessions ADD COLUMN payment_link_id uuid REFERENCES payment_links (id);
ALTER TABLE client_sessions ADD COLUMN three_ds_authentication_options jsonb;
CREATE INDEX client_sessions_link_idx ON client_sessions (payment_link_id, created_at) WHERE payment_link_id IS NOT NULL;
