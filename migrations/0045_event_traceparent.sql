-- Tracing (docs/operations.md, Tracing; docs/decisions.md "Tracing"): an event keeps the
-- W3C trace context (traceparent) of the request or work that wrote it, so that its
-- deliveries continue that trace. Null when tracing was off. Nullable, no default: a
-- process of the previous version writes events without it during a rolling upgrade.
ALTER TABLE webhook_events ADD COLUMN traceparent text;
