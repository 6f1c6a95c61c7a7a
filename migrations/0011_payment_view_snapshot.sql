-- The Payment resource as GET /v2/payments/{id} with Cache-Control: max-age last served
-- it, kept so that the next such read is one row (docs/decisions.md, "Stored payment
-- view"). Valid only while view_version = version and view_format names the running
-- code's view format and base URL; otherwise it is rebuilt from the ledger. Written only
-- for a payment at rest (no partner transaction PENDING, not processing): such a payment
-- changes only through statements that move version.
ALTER TABLE payments ADD COLUMN view text;
ALTER TABLE payments ADD COLUMN view_version integer;
ALTER TABLE payments ADD COLUMN view_format text;
