-- Webhooks: a transactional outbox (events written in the same transaction as the change
-- they describe), deliveries with retries, and a log of every attempt.

-- The signing secret of an entity, created on first use, encrypted with the master key
-- (AES-256-GCM, associated data "webhook-secret:<entity_id>:<version>"). After a
-- rotation the previous secret still signs (a second v1 signature) until
-- previous_expires_at, so that receivers can switch without losing deliveries.
CREATE TABLE webhook_secrets (
  entity_id            uuid PRIMARY KEY REFERENCES entities (id),
  version              integer NOT NULL DEFAULT 1,
  secret_enc           text NOT NULL,
  previous_secret_enc  text,
  previous_expires_at  timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  rotated_at           timestamptz
);

-- The default destination of an entity's events (events without a target of their own,
-- e.g. payment events of a payment not made through a link with a webhook).
-- headers: [{ "name": "...", "values": ["..."] }] as in the spec's webhook shape.
CREATE TABLE webhook_endpoints (
  entity_id   uuid PRIMARY KEY REFERENCES entities (id),
  url         text NOT NULL,
  headers     jsonb NOT NULL DEFAULT '[]',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per event; id is the event id receivers de-duplicate on. url/headers: the
-- event's own target (a payment link's webhook), null to use the entity's endpoint.
CREATE TABLE webhook_events (
  id          uuid PRIMARY KEY,
  entity_id   uuid NOT NULL REFERENCES entities (id),
  type        text NOT NULL CHECK (type ~ '^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$' AND length(type) <= 100),
  data        jsonb NOT NULL,
  url         text,
  headers     jsonb NOT NULL DEFAULT '[]',
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_events_entity_idx ON webhook_events (entity_id, created_at DESC, id DESC);

-- A delivery sends one event until it is DELIVERED or FAILED (gave up). The first
-- delivery is written with the event (when it has a destination); a replay adds another.
-- Each attempt goes to the event's own url, else to the entity's endpoint as set at the
-- time of the attempt (so fixing an endpoint also fixes pending retries). The worker
-- gives up (FAILED) when the next attempt would fall after created_at +
-- PAYD_WEBHOOK_MAX_AGE_HOURS. A worker claims a due delivery by moving next_attempt_at
-- forward by a lease and setting claim_token; if it dies, the delivery is due again
-- when the lease ends. Only the claim holder may record the outcome.
CREATE TABLE webhook_deliveries (
  id               uuid PRIMARY KEY,
  event_id         uuid NOT NULL REFERENCES webhook_events (id),
  entity_id        uuid NOT NULL REFERENCES entities (id),
  reason           text NOT NULL CHECK (reason IN ('EVENT', 'REPLAY')),
  status           text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
  attempt_count    integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  claim_token      uuid,
  last_status_code integer,
  last_error       text,
  delivered_at     timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'PENDING';
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id, created_at);

-- The delivery log: one row per HTTP attempt (url used; response body truncated).
CREATE TABLE webhook_attempts (
  id             uuid PRIMARY KEY,
  delivery_id    uuid NOT NULL REFERENCES webhook_deliveries (id),
  attempt_number integer NOT NULL,
  url            text,
  started_at     timestamptz NOT NULL,
  duration_ms    integer NOT NULL,
  status_code    integer,
  error          text,
  response_body  text,
  UNIQUE (delivery_id, attempt_number)
);
