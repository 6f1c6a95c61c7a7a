-- One running-totals rule (payd issue 44): a capture, void or refund counts only against
-- an authorization that counts as authorized. The void that reverses an authorization
-- the partner approved after payd had closed it (ERROR or REFUSED, then ANSWERED_LATE)
-- gives back what was never counted as authorized: it is part of no total, PENDING or
-- settled. The Payment's amounts already left it out; the sums stored on the payment
-- row (this trigger, and the statements' ledgerSums) counted it in reserved_void, then
-- total_voided, so that a payment with such a reversal stored total_voided 2500 while
-- its amounts said 0. The rule is written once in TypeScript (src/payments/ledger-totals.ts,
-- ledgerTotals), used by the view and by every statement that writes sums; this function
-- is the database's copy for the rows no statement counts (the insert of a row by a
-- process of an earlier version, the update of a row's status by a settlement that does
-- not count its own sums). test/payments/totals-rule.test.ts compares the two on
-- generated ledgers.
CREATE OR REPLACE FUNCTION payd_ledger_totals() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d_auth_pending bigint := 0; d_authorized bigint := 0; d_captured bigint := 0; d_voided bigint := 0; d_refunded bigint := 0;
  d_res_capture bigint := 0; d_res_void bigint := 0; d_res_refund bigint := 0;
  r record;
  sign integer;
BEGIN
  -- An operation row of an authorization that is not AUTHORIZED counts nowhere. (The
  -- authorization's status is settled before any of its operation rows exist, and never
  -- changes after: one look at it holds for the row's old and new versions.)
  IF NEW.kind <> 'AUTHORIZATION' AND NOT EXISTS (
       SELECT 1 FROM partner_transactions a WHERE a.id = NEW.parent_id AND a.status = 'AUTHORIZED') THEN
    RETURN NULL;
  END IF;
  FOR i IN 1..2 LOOP
    IF i = 1 THEN
      IF TG_OP <> 'UPDATE' THEN CONTINUE; END IF;
      r := OLD; sign := -1;
    ELSE
      r := NEW; sign := 1;
    END IF;
    IF r.kind = 'AUTHORIZATION' THEN
      IF r.status = 'PENDING' THEN d_auth_pending := d_auth_pending + sign * r.amount;
      ELSIF r.status = 'AUTHORIZED' THEN d_authorized := d_authorized + sign * r.amount; END IF;
    ELSIF r.status = 'SUCCESS' THEN
      IF r.kind = 'CAPTURE' THEN d_captured := d_captured + sign * r.amount;
      ELSIF r.kind = 'VOID' THEN d_voided := d_voided + sign * r.amount;
      ELSE d_refunded := d_refunded + sign * r.amount; END IF;
    ELSIF r.status = 'PENDING' THEN
      IF r.kind = 'CAPTURE' THEN d_res_capture := d_res_capture + sign * r.amount;
      ELSIF r.kind = 'VOID' THEN d_res_void := d_res_void + sign * r.amount;
      ELSE d_res_refund := d_res_refund + sign * r.amount; END IF;
    END IF;
  END LOOP;
  IF d_auth_pending <> 0 OR d_authorized <> 0 OR d_captured <> 0 OR d_voided <> 0 OR d_refunded <> 0
     OR d_res_capture <> 0 OR d_res_void <> 0 OR d_res_refund <> 0 THEN
    UPDATE payments SET
      authorize_pending = authorize_pending + d_auth_pending, total_authorized = total_authorized + d_authorized,
      total_captured = total_captured + d_captured, total_voided = total_voided + d_voided, total_refunded = total_refunded + d_refunded,
      reserved_capture = reserved_capture + d_res_capture, reserved_void = reserved_void + d_res_void, reserved_refund = reserved_refund + d_res_refund
    WHERE id = NEW.payment_id;
  END IF;
  RETURN NULL;
END
$$;

-- The payments whose stored sums counted such a reversal take back what it added.
UPDATE payments p SET
  total_voided = p.total_voided - s.voided,
  reserved_void = p.reserved_void - s.reserving,
  total_captured = p.total_captured - s.captured, reserved_capture = p.reserved_capture - s.capturing,
  total_refunded = p.total_refunded - s.refunded, reserved_refund = p.reserved_refund - s.refunding
FROM (
  SELECT c.payment_id,
    coalesce(sum(c.amount) FILTER (WHERE c.kind = 'VOID' AND c.status = 'SUCCESS'), 0) AS voided,
    coalesce(sum(c.amount) FILTER (WHERE c.kind = 'VOID' AND c.status = 'PENDING'), 0) AS reserving,
    coalesce(sum(c.amount) FILTER (WHERE c.kind = 'CAPTURE' AND c.status = 'SUCCESS'), 0) AS captured,
    coalesce(sum(c.amount) FILTER (WHERE c.kind = 'CAPTURE' AND c.status = 'PENDING'), 0) AS capturing,
    coalesce(sum(c.amount) FILTER (WHERE c.kind = 'REFUND' AND c.status = 'SUCCESS'), 0) AS refunded,
    coalesce(sum(c.amount) FILTER (WHERE c.kind = 'REFUND' AND c.status = 'PENDING'), 0) AS refunding
  FROM partner_transactions c JOIN partner_transactions a ON a.id = c.parent_id
  WHERE c.kind <> 'AUTHORIZATION' AND a.status <> 'AUTHORIZED'
  GROUP BY c.payment_id
) s
WHERE s.payment_id = p.id;
