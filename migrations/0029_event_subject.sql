-- The object an event is about (a payment's or a payment link's id), so that a payment's
-- page lists its webhook deliveries without reading event payloads (the dashboard's
-- timeline, issue 21). Partial index: one entry per event that has a subject.
ALTER TABLE webhook_events ADD COLUMN subject_id uuid;

-- Events written before this migration: their payload's id (payment.* and payment_link.*
-- events carry the object itself); a payload id that is not a UUID stays without subject.
UPDATE webhook_events
   SET subject_id = (data::jsonb ->> 'id')::uuid
 WHERE (type LIKE 'payment.%' OR type LIKE 'payment_link.%')
   AND (data::jsonb ->> 'id') ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

CREATE INDEX webhook_events_subject_idx ON webhook_events (entity_id, subject_id, created_at) WHERE subject_id IS NOT NULL;
