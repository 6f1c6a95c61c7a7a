-- Extra webhook header values often carry a merchant's credential (Authorization,
-- x-shop-token...): they are now sealed like the signing secrets (AES-256-GCM with the
-- master key, associated data "webhook-headers:<entity_id>"), and opened only to send.
--
-- headers_enc: the sealed JSON of [{ "name", "values" }]; the headers column keeps the
-- names with every value replaced by "[redacted]" (what the API shows and the delivery
-- log lists). A payment link keeps both inside its webhook column
-- ({ url, headers: masked, headers_enc }), and its events copy headers_enc as it is.
--
-- SQL cannot run the app's cryptography, so this migration only adds the columns: rows
-- written before it still hold plain values (headers_enc null) and every payd process
-- seals them when it starts (src/webhooks/header-seal.ts, sealPlainHeaders), in batches,
-- each row by a conditional UPDATE so that several processes may do it at once. Until
-- then the dispatcher sends the plain values it finds.
ALTER TABLE webhook_endpoints ADD COLUMN headers_enc text;
ALTER TABLE webhook_events ADD COLUMN headers_enc text;

-- The start-up sweep finds the rows left plain without reading whole tables; new rows
-- never match (their values are masked and sealed), so these indexes stay empty.
CREATE INDEX webhook_events_plain_headers_idx ON webhook_events (id)
  WHERE headers_enc IS NULL AND headers <> '[]'::jsonb;
CREATE INDEX payment_links_plain_headers_idx ON payment_links (id)
  WHERE jsonb_typeof(webhook->'headers') = 'array' AND webhook->'headers' <> '[]'::jsonb AND NOT (webhook ? 'headers_enc');
