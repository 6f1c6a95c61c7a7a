-- Background work that does not grow with history (issue 45): every periodic query reads
-- an index that holds only the rows still in flight, so a pass costs the same with a
-- thousand or ten million payments (test/payments/in-flight-plans.test.ts EXPLAINs each).
--
-- * Payments left processing (recovery): `WHERE p.processing` had no index and read the
--   whole table on every pass. A payment is processing only while its creating request
--   talks to partners, so this index is nearly empty.
CREATE INDEX payments_processing_idx ON payments (updated_at) WHERE processing;

-- * 3-D Secure challenges awaiting the shopper (the challenge expiry and its gauge):
--   authorizations PENDING with a redirection, by age.
CREATE INDEX partner_transactions_challenges_idx ON partner_transactions (created_at)
  WHERE status = 'PENDING' AND redirection IS NOT NULL;

-- * The idempotency lookup (entity_id = $1 AND idempotency_key = $2): on a freshly
--   migrated database its generic plan (a prepared statement after five executions)
--   tied between the unique constraint's index and every index that leads with
--   entity_id, and the newest of those won (payments_entity_status_created_idx, walking
--   every payment of the merchant with a Filter on the key). A partial unique index is
--   cheaper in the planner's estimate (it holds only the payments with a key), so the
--   lookup uses it whatever index is added later. The constraint stays: migrations only
--   add, and the previous version's ON CONFLICT (entity_id, idempotency_key) infers it
--   (docs/decisions.md, "Idempotency lookup plan").
CREATE UNIQUE INDEX payments_idempotency_key_idx ON payments (entity_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
