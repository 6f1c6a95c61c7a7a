-- Client sessions, payments, operations (captures, refunds, voids) and the partner
-- transactions that are the ledger of every amount. Amounts are bigint minor units.

CREATE TABLE client_sessions (
  id                       uuid PRIMARY KEY,
  entity_id                uuid NOT NULL REFERENCES entities (id),
  status                   text NOT NULL,
  amount                   bigint NOT NULL CHECK (amount > 0),
  currency                 text NOT NULL,
  capture_mode             text NOT NULL,
  integration_mode         text NOT NULL,
  allow_future_usage       boolean NOT NULL DEFAULT false,
  "order"                  jsonb,
  customer                 jsonb,
  shopper_redirection_url  text,
  expires_at               timestamptz NOT NULL,
  eligible_solutions       jsonb NOT NULL DEFAULT '[]',
  payment_id               uuid,
  version                  integer NOT NULL DEFAULT 1,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX client_sessions_entity_idx ON client_sessions (entity_id, created_at);

CREATE TABLE payments (
  id                    uuid PRIMARY KEY,
  entity_id             uuid NOT NULL REFERENCES entities (id),
  version               integer NOT NULL DEFAULT 1,
  amount                bigint NOT NULL CHECK (amount > 0),
  currency              text NOT NULL,
  capture_mode          text NOT NULL,
  allow_future_usage    boolean NOT NULL DEFAULT false,
  client_session_id     uuid REFERENCES client_sessions (id),
  order_reference       text,
  "order"               jsonb,
  customer              jsonb,
  browser               jsonb,
  split                 jsonb NOT NULL,
  authorization_status  text NOT NULL,
  -- true while the creating request talks to partners (replays are held meanwhile)
  processing            boolean NOT NULL DEFAULT false,
  idempotency_key       text,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  UNIQUE (entity_id, idempotency_key)
);
CREATE INDEX payments_entity_idx ON payments (entity_id, created_at);
CREATE UNIQUE INDEX payments_client_session_idx ON payments (client_session_id) WHERE client_session_id IS NOT NULL;

-- A capture, refund or void asked by the merchant. Its key is unique per payment,
-- whatever the kind: the spec scopes idempotency keys to the payment.
CREATE TABLE payment_operations (
  id                  uuid PRIMARY KEY,
  payment_id          uuid NOT NULL REFERENCES payments (id),
  kind                text NOT NULL CHECK (kind IN ('CAPTURE', 'REFUND', 'VOID')),
  amount              bigint NOT NULL CHECK (amount > 0),
  status              text NOT NULL CHECK (status IN ('PENDING', 'SUCCESS', 'FAILURE', 'CONFLICT')),
  triggered_by        text NOT NULL DEFAULT 'MERCHANT',
  merchant_reference  text,
  reason              text,
  idempotency_key     text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  UNIQUE (payment_id, idempotency_key)
);
CREATE INDEX payment_operations_payment_idx ON payment_operations (payment_id, created_at);
CREATE INDEX payment_operations_pending_idx ON payment_operations (status, updated_at) WHERE status = 'PENDING';

-- The ledger: one row per call to a partner. kind AUTHORIZATION rows belong to the
-- payment; CAPTURE/REFUND/VOID rows belong to an operation and to the authorization
-- they draw on (parent_id). partner_key is the idempotency key sent to the partner.
CREATE TABLE partner_transactions (
  id                          uuid PRIMARY KEY,
  payment_id                  uuid NOT NULL REFERENCES payments (id),
  operation_id                uuid REFERENCES payment_operations (id),
  parent_id                   uuid REFERENCES partner_transactions (id),
  kind                        text NOT NULL CHECK (kind IN ('AUTHORIZATION', 'CAPTURE', 'REFUND', 'VOID')),
  seq                         integer NOT NULL,
  partner                     text NOT NULL,
  method                      text NOT NULL,
  amount                      bigint NOT NULL CHECK (amount > 0),
  status                      text NOT NULL,
  partner_key                 text NOT NULL UNIQUE,
  partner_reference           text,
  partner_status              text,
  partner_status_description  text,
  status_code                 text,
  card                        jsonb,
  redirection                 jsonb,
  save_token                  boolean,
  token_saved                 boolean,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX partner_transactions_payment_idx ON partner_transactions (payment_id, seq);
CREATE INDEX partner_transactions_pending_idx ON partner_transactions (status, updated_at) WHERE status = 'PENDING';

-- State of the built-in simulated partners (they play external acquirers, so they
-- keep their own records, keyed by the idempotency key payd sends them).
CREATE TABLE sim_partner_operations (
  partner      text NOT NULL,
  key          text NOT NULL,
  kind         text NOT NULL,
  reference    text NOT NULL,
  parent_ref   text,
  amount       bigint NOT NULL,
  status       text NOT NULL,
  data         jsonb NOT NULL DEFAULT '{}',
  resolve_at   timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (partner, key)
);
CREATE UNIQUE INDEX sim_partner_operations_ref_idx ON sim_partner_operations (partner, reference);
CREATE INDEX sim_partner_operations_parent_idx ON sim_partner_operations (partner, parent_ref) WHERE parent_ref IS NOT NULL;

CREATE TABLE sim_gift_cards (
  fingerprint  text PRIMARY KEY,
  balance      bigint NOT NULL CHECK (balance >= 0),
  currency     text NOT NULL
);
