-- Running totals of each payment's ledger, and its operation count (payd issue 12,
-- item 7; docs/decisions.md, "Operations per payment"). The ledger (partner_transactions)
-- stays the source of every amount; these columns are its sums, kept by the database in
-- the statement that writes a ledger row, so an operation decides what is available from
-- the payment row alone instead of reading every earlier operation:
-- * authorize_pending, total_authorized, total_captured, total_voided, total_refunded:
--   the sums the Payment's `amounts` derive from (AUTHORIZATION PENDING / AUTHORIZED,
--   CAPTURE / VOID / REFUND SUCCESS);
-- * reserved_capture, reserved_void, reserved_refund: what operations in flight reserve
--   (their ledger rows still PENDING);
-- * operation_count: captures, refunds and voids of the payment, every status and
--   trigger together (PAYD_MAX_OPERATIONS_PER_PAYMENT caps it).
-- Lock order: the trigger updates the payment after its ledger row; the operation paths
-- lock the payment first and then only insert new ledger rows, so the two never wait on
-- each other in a cycle.
ALTER TABLE payments
  ADD COLUMN operation_count   integer NOT NULL DEFAULT 0,
  ADD COLUMN authorize_pending bigint NOT NULL DEFAULT 0,
  ADD COLUMN total_authorized  bigint NOT NULL DEFAULT 0,
  ADD COLUMN total_captured    bigint NOT NULL DEFAULT 0,
  ADD COLUMN total_voided      bigint NOT NULL DEFAULT 0,
  ADD COLUMN total_refunded    bigint NOT NULL DEFAULT 0,
  ADD COLUMN reserved_capture  bigint NOT NULL DEFAULT 0,
  ADD COLUMN reserved_void     bigint NOT NULL DEFAULT 0,
  ADD COLUMN reserved_refund   bigint NOT NULL DEFAULT 0;

UPDATE payments p SET
  authorize_pending = s.authorize_pending, total_authorized = s.total_authorized, total_captured = s.total_captured,
  total_voided = s.total_voided, total_refunded = s.total_refunded,
  reserved_capture = s.reserved_capture, reserved_void = s.reserved_void, reserved_refund = s.reserved_refund
FROM (
  SELECT payment_id,
    coalesce(sum(amount) FILTER (WHERE kind = 'AUTHORIZATION' AND status = 'PENDING'), 0) AS authorize_pending,
    coalesce(sum(amount) FILTER (WHERE kind = 'AUTHORIZATION' AND status = 'AUTHORIZED'), 0) AS total_authorized,
    coalesce(sum(amount) FILTER (WHERE kind = 'CAPTURE' AND status = 'SUCCESS'), 0) AS total_captured,
    coalesce(sum(amount) FILTER (WHERE kind = 'VOID' AND status = 'SUCCESS'), 0) AS total_voided,
    coalesce(sum(amount) FILTER (WHERE kind = 'REFUND' AND status = 'SUCCESS'), 0) AS total_refunded,
    coalesce(sum(amount) FILTER (WHERE kind = 'CAPTURE' AND status = 'PENDING'), 0) AS reserved_capture,
    coalesce(sum(amount) FILTER (WHERE kind = 'VOID' AND status = 'PENDING'), 0) AS reserved_void,
    coalesce(sum(amount) FILTER (WHERE kind = 'REFUND' AND status = 'PENDING'), 0) AS reserved_refund
  FROM partner_transactions GROUP BY payment_id
) s
WHERE s.payment_id = p.id;

UPDATE payments p SET operation_count = s.n
FROM (SELECT payment_id, count(*)::int AS n FROM payment_operations GROUP BY payment_id) s
WHERE s.payment_id = p.id;

-- What one ledger row adds to its payment's sums: its amount in the column its kind and
-- status name (nothing for a status that counts nowhere: REFUSED, ERROR, FAILURE).
CREATE FUNCTION payd_ledger_totals() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d_auth_pending bigint := 0; d_authorized bigint := 0; d_captured bigint := 0; d_voided bigint := 0; d_refunded bigint := 0;
  d_res_capture bigint := 0; d_res_void bigint := 0; d_res_refund bigint := 0;
  r record;
  sign integer;
BEGIN
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

CREATE TRIGGER partner_transactions_totals_ins AFTER INSERT ON partner_transactions
  FOR EACH ROW EXECUTE FUNCTION payd_ledger_totals();
CREATE TRIGGER partner_transactions_totals_upd AFTER UPDATE OF status, amount ON partner_transactions
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.amount IS DISTINCT FROM NEW.amount)
  EXECUTE FUNCTION payd_ledger_totals();

CREATE FUNCTION payd_operation_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE payments SET operation_count = operation_count + 1 WHERE id = NEW.payment_id;
  RETURN NULL;
END
$$;

CREATE TRIGGER payment_operations_count AFTER INSERT ON payment_operations
  FOR EACH ROW EXECUTE FUNCTION payd_operation_count();
