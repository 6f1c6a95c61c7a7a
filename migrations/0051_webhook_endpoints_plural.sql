-- Several webhook endpoints per entity (issue 43): each with its own id, URL, headers,
-- enabled_events, status and signing secret; an event goes to every enabled endpoint
-- whose enabled_events match it, one delivery per endpoint.
--
-- The existing rows (one per entity, set by PUT .../webhook-endpoint) become each
-- entity's "default" endpoint: is_default true, enabled_events ["*"]. The default
-- endpoint is the one the deprecated singular routes manage, and it keeps signing with
-- the entity's secret (webhook_secrets), so receivers see no change. Endpoints created
-- through /v2/webhook-endpoints have their own secret in the columns below (sealed with
-- the master key, associated data "webhook-endpoint-secret:<endpoint id>:<version>").
ALTER TABLE webhook_endpoints ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_pkey;
ALTER TABLE webhook_endpoints ADD PRIMARY KEY (id);
ALTER TABLE webhook_endpoints ADD COLUMN is_default boolean NOT NULL DEFAULT false;
UPDATE webhook_endpoints SET is_default = true;
CREATE UNIQUE INDEX webhook_endpoints_default_idx ON webhook_endpoints (entity_id) WHERE is_default;
CREATE INDEX webhook_endpoints_entity_idx ON webhook_endpoints (entity_id, created_at, id);
ALTER TABLE webhook_endpoints ADD COLUMN description text;
ALTER TABLE webhook_endpoints ADD COLUMN enabled_events jsonb NOT NULL DEFAULT '["*"]';
ALTER TABLE webhook_endpoints ADD COLUMN status text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled'));
ALTER TABLE webhook_endpoints ADD COLUMN secret_version integer;
ALTER TABLE webhook_endpoints ADD COLUMN secret_enc text;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_enc text;
ALTER TABLE webhook_endpoints ADD COLUMN previous_expires_at timestamptz;
ALTER TABLE webhook_endpoints ADD COLUMN rotated_at timestamptz;

-- The endpoint a delivery goes to (null: the event's own URL, or a delivery written
-- before this migration, which goes to the entity's default endpoint as before). No
-- foreign key: a removed endpoint leaves its pending deliveries without a destination.
ALTER TABLE webhook_deliveries ADD COLUMN endpoint_id uuid;
