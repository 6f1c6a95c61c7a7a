-- A capture, refund or void received by a simulated partner that keeps no other state
-- (the card acquirer, BNPL), recorded in one call instead of a transaction of five
-- statements (BEGIN, the authorization locked, its children's sums, the insert, COMMIT).
--
-- The caller has read the authorization (unlocked: its amount, status and behaviour flags
-- do not change once AUTHORIZED) and decided the answer the flags give. This function
-- takes the authorization's row lock, sums the children that count against it, turns the
-- answer into a refusal when the amount is more than the room left, and inserts it unless
-- the key was used. Each statement of a VOLATILE plpgsql function takes a new snapshot
-- under READ COMMITTED, so the sums see every child committed while this call waited for
-- the lock. The same rules as simulated-partner.ts's followUpAnswer (room first). What
-- was taken counts the children that succeeded and those whose answer timed out but
-- which the partner processed (PROCESSING, to settle as SUCCEEDED), as in childTotals.
--
-- Returns the operation recorded for the key: this call's (its reference is the one
-- given) or the first call's.
CREATE FUNCTION sim_follow_up(
  p_partner text, p_key text, p_kind text, p_reference text, p_parent_ref text, p_amount bigint,
  p_status text, p_data jsonb, p_resolve_at timestamptz
) RETURNS SETOF sim_partner_operations LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  parent_amount bigint;
  captured bigint;
  refunded bigint;
  voided bigint;
  room bigint;
BEGIN
  SELECT amount INTO parent_amount FROM sim_partner_operations
   WHERE partner = p_partner AND reference = p_parent_ref FOR UPDATE;
  SELECT coalesce(sum(amount) FILTER (WHERE kind = 'CAPTURE'), 0),
         coalesce(sum(amount) FILTER (WHERE kind = 'REFUND'), 0),
         coalesce(sum(amount) FILTER (WHERE kind = 'VOID'), 0)
    INTO captured, refunded, voided
    FROM sim_partner_operations
   WHERE partner = p_partner AND parent_ref = p_parent_ref
     AND (status = 'SUCCEEDED' OR (status = 'PROCESSING' AND data ->> 'final' = 'SUCCEEDED'));
  room := CASE WHEN p_kind = 'REFUND' THEN captured - refunded ELSE parent_amount - captured - voided END;
  IF parent_amount IS NULL THEN
    -- (The caller read the authorization: only a reference never recorded gets here.)
    p_status := 'REFUSED';
    p_data := jsonb_build_object('code', 'NO_AUTHORIZATION', 'description', 'No authorization with this reference');
    p_resolve_at := NULL;
  ELSIF p_amount > room THEN
    p_status := 'REFUSED';
    p_data := jsonb_build_object('code', 'AMOUNT_NOT_AVAILABLE', 'description', format('Only %s is available to %s', room, lower(p_kind)));
    p_resolve_at := NULL;
  END IF;
  RETURN QUERY
    INSERT INTO sim_partner_operations AS o (partner, key, kind, reference, parent_ref, amount, status, data, resolve_at)
    VALUES (p_partner, p_key, p_kind, p_reference, p_parent_ref, p_amount, p_status, p_data, p_resolve_at)
    ON CONFLICT (partner, key) DO NOTHING
    RETURNING o.*;
  IF NOT FOUND THEN
    RETURN QUERY SELECT * FROM sim_partner_operations o WHERE o.partner = p_partner AND o.key = p_key;
  END IF;
END
$$;
