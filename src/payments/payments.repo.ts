// Reads of payments, their operations and the partner-transaction ledger, the row types,
// and the recovery claims. Every write of money state (a payment's status, version and
// running totals, its ledger rows, its operations) is money.repo.ts's: reserve, record,
// conclude. (saveView writes the stored view, a cache of the answer, not money state.)
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../platform/db/index.ts';
import type { AuthorizationStatus, CaptureModeValue, OperationStatus, Trigger, TxStatus } from './common.schemas.ts';
import type { LedgerSums } from './ledger-totals.ts';

export type { LedgerSums } from './ledger-totals.ts';

/**
 * Sums of the payment's ledger and its operation count, kept on the payment row by the
 * database in the statement that writes a ledger or operation row (migration 0015), so
 * that an operation decides from the payment row alone.
 */
export interface PaymentTotals extends LedgerSums {
  operation_count: number;
}

export interface PaymentRow extends PaymentTotals {
  id: string;
  entity_id: string;
  version: number;
  amount: number;
  currency: string;
  capture_mode: CaptureModeValue;
  allow_future_usage: boolean;
  client_session_id: string | null;
  order_reference: string | null;
  order: Record<string, unknown> | null;
  customer: Record<string, unknown> | null;
  browser: Record<string, unknown> | null;
  split: Array<{ partner: string; method: string; amount: number }>;
  authorization_status: AuthorizationStatus;
  processing: boolean;
  idempotency_key: string | null;
  /**
   * The fingerprint of the request that created it with its key (platform/http/idempotency.ts,
   * ownKey): written, read only by the key's lookup (not in PAYMENT_COLS).
   */
  request_fingerprint?: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A payment's own fields, without the sums the database keeps (what views are built from). */
export type PaymentBase = Omit<PaymentRow, keyof PaymentTotals>;

export type TxKind = 'AUTHORIZATION' | 'CAPTURE' | 'REFUND' | 'VOID';

/** Statuses of a ledger row, by its kind: an authorization's, or a capture's, refund's or void's. */
export type AuthorizationTxStatus = 'PENDING' | 'AUTHORIZED' | 'REFUSED' | 'ERROR';
export type OperationTxStatus = 'PENDING' | 'SUCCESS' | 'FAILURE';

/** A ledger row: discriminated by kind, so that an AUTHORIZATION row in SUCCESS does not type-check. */
export type PartnerTxRow = PartnerTxBase & (
  | { kind: 'AUTHORIZATION'; status: AuthorizationTxStatus }
  | { kind: 'CAPTURE' | 'REFUND' | 'VOID'; status: OperationTxStatus });

interface PartnerTxBase {
  id: string;
  payment_id: string;
  operation_id: string | null;
  parent_id: string | null;
  seq: number;
  partner: string;
  method: string;
  amount: number;
  partner_key: string;
  partner_reference: string | null;
  partner_status: string | null;
  partner_status_description: string | null;
  status_code: string | null;
  card: Record<string, unknown> | null;
  redirection: { url: string; method: string } | null;
  save_token: boolean | null;
  token_saved: boolean | null;
  created_at: Date;
  updated_at: Date;
}

export type OperationKind = 'CAPTURE' | 'REFUND' | 'VOID';

export interface OperationRow {
  id: string;
  payment_id: string;
  kind: OperationKind;
  amount: number;
  status: OperationStatus;
  triggered_by: Trigger;
  merchant_reference: string | null;
  reason: string | null;
  idempotency_key: string | null;
  /** As PaymentRow's: written, read only by the key's lookup (not in OP_COLS). */
  request_fingerprint?: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * A payment row with its whole ledger and its operations: what its view is built from, and
 * what recent-payments.ts remembers (frozen once remembered: callers copy, never change them).
 */
export interface Ledger {
  payment: PaymentRow;
  txs: PartnerTxRow[];
  ops: OperationRow[];
}

export const PAYMENT_COLS = `id, entity_id, version, amount, currency, capture_mode, allow_future_usage, client_session_id,
  order_reference, "order", customer, browser, split, authorization_status, processing, idempotency_key, created_at, updated_at,
  operation_count, authorize_pending, total_authorized, total_captured, total_voided, total_refunded, reserved_capture, reserved_void, reserved_refund`;
const TX_COLS = `id, payment_id, operation_id, parent_id, kind, seq, partner, method, amount, status, partner_key,
  partner_reference, partner_status, partner_status_description, status_code, card, redirection, save_token, token_saved,
  created_at, updated_at`;
const OP_COLS = 'id, payment_id, kind, amount, status, triggered_by, merchant_reference, reason, idempotency_key, created_at, updated_at';

export type NewPayment = Omit<PaymentRow, 'version' | 'created_at' | 'updated_at' | keyof PaymentTotals>;
export type NewPartnerTx = Pick<PartnerTxRow, 'id' | 'payment_id' | 'operation_id' | 'parent_id' | 'kind' | 'seq' | 'partner' | 'method' | 'amount' | 'status' | 'partner_key' | 'card' | 'save_token'>;
export type NewOperation = Pick<OperationRow, 'id' | 'payment_id' | 'kind' | 'amount' | 'status' | 'triggered_by' | 'merchant_reference' | 'reason' | 'idempotency_key' | 'request_fingerprint'>;

export interface TxUpdate {
  status: TxStatus;
  partner_reference?: string | undefined;
  partner_status?: string | undefined;
  partner_status_description?: string | undefined;
  status_code?: string | undefined;
  card?: Record<string, unknown> | undefined;
  redirection?: { url: string; method: string } | null | undefined;
  token_saved?: boolean | undefined;
}

/** A ledger row a partner's notification names: what the running-totals rule reads of it, its authorization, its payment. */
export type NotifiedTx = Pick<PartnerTxRow, 'id' | 'kind' | 'status' | 'amount' | 'parent_id' | 'payment_id'> & {
  entity_id: string;
  /** The authorization an operation row belongs to, as stored (null for an authorization). */
  parent: Pick<PartnerTxRow, 'id' | 'status'> | null;
};
type NotifiedTxRow = Omit<NotifiedTx, 'parent'> & { parent_status: PartnerTxRow['status'] | null };
const notifiedTx = ({ parent_status, ...t }: NotifiedTxRow): NotifiedTx =>
  ({ ...t, parent: t.parent_id !== null && parent_status !== null ? { id: t.parent_id, status: parent_status } : null });

const TX_STATUSES_OF = {
  AUTHORIZATION: new Set<TxStatus>(['PENDING', 'AUTHORIZED', 'REFUSED', 'ERROR']),
  OPERATION: new Set<TxStatus>(['PENDING', 'SUCCESS', 'FAILURE']),
};

/** A ledger row built from loose parts, checked: its status is one of its kind's (anything else is a bug, thrown). */
function checkedTx(row: Omit<PartnerTxRow, 'kind' | 'status'> & { kind: TxKind; status: TxStatus }): PartnerTxRow {
  if (!TX_STATUSES_OF[row.kind === 'AUTHORIZATION' ? 'AUTHORIZATION' : 'OPERATION'].has(row.status)) {
    throw new Error(`a ledger row of kind ${row.kind} cannot be ${row.status}`);
  }
  return row as PartnerTxRow;
}

// (Rows are built field by field: on Node 20, a spread followed by properties the source
// lacks, as in { ...t, created_at }, took 3-14 µs per object against 0.02 µs; measured.)
export function newTxRow(t: NewPartnerTx, created_at: Date, updated_at: Date): PartnerTxRow {
  return checkedTx({
    id: t.id, payment_id: t.payment_id, operation_id: t.operation_id, parent_id: t.parent_id, kind: t.kind, seq: t.seq,
    partner: t.partner, method: t.method, amount: t.amount, status: t.status, partner_key: t.partner_key,
    partner_reference: null, partner_status: null, partner_status_description: null, status_code: null,
    card: t.card, redirection: null, save_token: t.save_token, token_saved: null, created_at, updated_at,
  });
}

/** The next free ledger number after these rows. */
export function nextSeqOf(txs: PartnerTxRow[]): number {
  let max = 0;
  for (const t of txs) if (t.seq > max) max = t.seq;
  return max + 1;
}

/**
 * The operation's ledger rows, PENDING, one per allocation, numbered from `seq` (the
 * next free ledger number); each with the partner key `<operation id>:<n>` its partner
 * call uses.
 */
export function pendingChildren(kind: OperationKind, paymentId: string, opId: string, seq: number,
  allocations: Array<{ auth: PartnerTxRow; amount: number }>): NewPartnerTx[] {
  return allocations.map((a, i) => ({
    id: randomUUID(), payment_id: paymentId, operation_id: opId, parent_id: a.auth.id, kind, seq: seq++,
    partner: a.auth.partner, method: a.auth.method, amount: a.amount, status: 'PENDING', partner_key: `${opId}:${i + 1}`,
    card: a.auth.card, save_token: null,
  }));
}

/** The row as settleTx leaves it (the same coalescing as its SQL), for views built without re-reading. */
export function settledTxRow(t: PartnerTxRow, u: TxUpdate, updated_at: Date): PartnerTxRow {
  return checkedTx({
    ...t,
    status: u.status,
    partner_reference: u.partner_reference ?? t.partner_reference,
    partner_status: u.partner_status ?? t.partner_status,
    partner_status_description: u.partner_status_description ?? t.partner_status_description,
    status_code: u.status_code ?? t.status_code,
    card: u.card ?? t.card,
    redirection: u.redirection !== undefined ? u.redirection : t.redirection,
    token_saved: u.token_saved ?? t.token_saved,
    updated_at,
  });
}

/** A ledger or operation row parsed from json_agg (its own fresh object): timestamps as Dates. */
function withDates<T extends { created_at: Date; updated_at: Date }>(r: T): T {
  r.created_at = new Date(r.created_at);
  r.updated_at = new Date(r.updated_at);
  return r;
}

export const paymentsRepo = {
  async get(q: Queryable, entityId: string, id: string, lock = false): Promise<PaymentRow | undefined> {
    const { rows } = await q.query<PaymentRow>(
      `SELECT ${PAYMENT_COLS} FROM payments WHERE id = $1 AND entity_id = $2${lock ? ' FOR UPDATE' : ''}`,
      [id, entityId],
    );
    return rows[0];
  },

  /** The payment with its ledger and operations in one round trip (reads without a lock). */
  async getWithLedger(q: Queryable, entityId: string, id: string): Promise<Ledger | undefined> {
    return (await paymentsRepo.getManyWithLedger(q, entityId, [id]))[0];
  },

  /**
   * Payments of the entity among `ids` (in no particular order), each with its whole ledger
   * and its operations. One id keeps the statement getWithLedger always ran (`id = $1`): the
   * read of a capture whose payment this process does not remember.
   */
  async getManyWithLedger(q: Queryable, entityId: string, ids: readonly string[]): Promise<Ledger[]> {
    const { rows } = await q.query<PaymentRow & { txs: PartnerTxRow[]; ops: OperationRow[] }>(
      `SELECT ${PAYMENT_COLS},
         coalesce((SELECT json_agg(t ORDER BY t.seq) FROM (SELECT ${TX_COLS} FROM partner_transactions WHERE payment_id = p.id) t), '[]') AS txs,
         coalesce((SELECT json_agg(o ORDER BY o.created_at, o.id) FROM (SELECT ${OP_COLS} FROM payment_operations WHERE payment_id = p.id) o), '[]') AS ops
       FROM payments p WHERE ${ids.length === 1 ? 'id = $1' : 'id = ANY($1::uuid[])'} AND entity_id = $2`,
      [ids.length === 1 ? ids[0] : ids, entityId],
    );
    return rows.map(({ txs, ops, ...payment }) => ({ payment, txs: txs.map(withDates), ops: ops.map(withDates) }));
  },

  /**
   * The stored view of the payment when it is valid for `format` (see saveView):
   * { view: null } when the payment exists without a valid one, undefined when no such
   * payment for this entity.
   */
  async storedView(q: Queryable, entityId: string, id: string, format: string): Promise<{ view: string | null } | undefined> {
    const { rows } = await q.query<{ view: string | null }>(
      `SELECT CASE WHEN view_version = version AND view_format = $3 THEN view END AS view FROM payments WHERE id = $1 AND entity_id = $2`,
      [id, entityId, format],
    );
    return rows[0];
  },

  /**
   * Keeps each view built from its payment at `version`, unless the payment moved on
   * meanwhile. Only for payments at rest (nothing PENDING, not processing): at rest, a
   * payment changes only through statements that move its version, so the view stays
   * exact for as long as the version does. One statement for any number of payments (a
   * list page keeps the views of its payments at once).
   */
  async saveViews(q: Queryable, format: string, views: ReadonlyArray<{ id: string; version: number; view: string }>): Promise<void> {
    // (Readers racing on a new version: the first one writes, the others find it done.)
    // A row locked by a change under way is left as it is (SKIP LOCKED): a read never
    // waits for a lock, and that change moves the version anyway.
    await q.query(
      `UPDATE payments SET view = v.view, view_version = v.version, view_format = $4
         FROM unnest($1::uuid[], $2::integer[], $3::text[]) AS v(id, version, view)
        WHERE payments.id = v.id AND payments.id = ANY(ARRAY(SELECT id FROM payments WHERE id = ANY($1::uuid[]) FOR UPDATE SKIP LOCKED))
          AND payments.version = v.version AND (payments.view_version IS DISTINCT FROM v.version OR payments.view_format IS DISTINCT FROM $4)`,
      [views.map((v) => v.id), views.map((v) => v.version), views.map((v) => v.view), format],
    );
  },

  async getById(q: Queryable, id: string): Promise<PaymentRow | undefined> {
    const { rows } = await q.query<PaymentRow>(`SELECT ${PAYMENT_COLS} FROM payments WHERE id = $1`, [id]);
    return rows[0];
  },

  /**
   * The ledger and operations of a payment in one query. Under the payment's row lock,
   * call it after the locking SELECT (a statement that waited for the lock reads the
   * rows committed meanwhile only from its next statement on).
   */
  async ledger(q: Queryable, paymentId: string): Promise<{ txs: PartnerTxRow[]; ops: OperationRow[] }> {
    const { rows } = await q.query<{ txs: PartnerTxRow[]; ops: OperationRow[] }>(
      `SELECT coalesce((SELECT json_agg(t ORDER BY t.seq) FROM (SELECT ${TX_COLS} FROM partner_transactions WHERE payment_id = $1) t), '[]') AS txs,
              coalesce((SELECT json_agg(o ORDER BY o.created_at, o.id) FROM (SELECT ${OP_COLS} FROM payment_operations WHERE payment_id = $1) o), '[]') AS ops`,
      [paymentId],
    );
    return { txs: rows[0]!.txs.map(withDates), ops: rows[0]!.ops.map(withDates) };
  },

  /**
   * The authorization rows of a payment (numbered 1..parts at creation, so this reads
   * at most `parts` rows however long its ledger), and the next free ledger number.
   * Under the payment's row lock, call it after the locking SELECT.
   */
  async authorizations(q: Queryable, paymentId: string, parts: number): Promise<{ auths: PartnerTxRow[]; nextSeq: number }> {
    const { rows } = await q.query<{ auths: PartnerTxRow[]; next_seq: number }>(
      `SELECT coalesce((SELECT json_agg(t ORDER BY t.seq) FROM (SELECT ${TX_COLS} FROM partner_transactions
                 WHERE payment_id = $1 AND seq <= $2 AND kind = 'AUTHORIZATION') t), '[]') AS auths,
              (SELECT coalesce(max(seq), 0)::int + 1 FROM partner_transactions WHERE payment_id = $1) AS next_seq`,
      [paymentId, parts],
    );
    return { auths: rows[0]!.auths.map(withDates), nextSeq: rows[0]!.next_seq };
  },

  async getByKey(q: Queryable, entityId: string, key: string): Promise<PaymentRow | undefined> {
    const { rows } = await q.query<PaymentRow>(
      `SELECT ${PAYMENT_COLS}, request_fingerprint FROM payments WHERE entity_id = $1 AND idempotency_key = $2`,
      [entityId, key],
    );
    return rows[0];
  },

  /**
   * A partner's transaction by the key payd sent it (partner notifications), with its
   * payment's entity and, for an operation row, its authorization as stored (what the
   * running-totals rule reads: ledger-totals.ts).
   */
  async txByPartnerKey(q: Queryable, partner: string, key: string): Promise<NotifiedTx | undefined> {
    const { rows } = await q.query<NotifiedTxRow>(
      `SELECT t.id, t.kind, t.status, t.amount, t.parent_id, a.status AS parent_status, t.payment_id, p.entity_id
         FROM partner_transactions t JOIN payments p ON p.id = t.payment_id LEFT JOIN partner_transactions a ON a.id = t.parent_id
        WHERE t.partner_key = $1 AND t.partner = $2`, [key, partner]);
    return rows.map(notifiedTx)[0];
  },

  /** A partner's PENDING captures of the authorization it knows by this reference (partner notifications), as txByPartnerKey. */
  async pendingCapturesOf(q: Queryable, partner: string, authorizationReference: string): Promise<NotifiedTx[]> {
    const { rows } = await q.query<NotifiedTxRow>(
      `SELECT c.id, c.kind, c.status, c.amount, c.parent_id, a.status AS parent_status, c.payment_id, p.entity_id FROM partner_transactions a
         JOIN partner_transactions c ON c.parent_id = a.id AND c.kind = 'CAPTURE' AND c.status = 'PENDING'
         JOIN payments p ON p.id = c.payment_id
        WHERE a.partner = $1 AND a.partner_reference = $2 AND a.kind = 'AUTHORIZATION'`, [partner, authorizationReference]);
    return rows.map(notifiedTx);
  },

  async txs(q: Queryable, paymentId: string): Promise<PartnerTxRow[]> {
    const { rows } = await q.query<PartnerTxRow>(
      `SELECT ${TX_COLS} FROM partner_transactions WHERE payment_id = $1 ORDER BY seq`,
      [paymentId],
    );
    return rows;
  },

  async nextSeq(q: Queryable, paymentId: string): Promise<number> {
    const { rows } = await q.query<{ n: number }>(
      'SELECT coalesce(max(seq), 0)::int + 1 AS n FROM partner_transactions WHERE payment_id = $1',
      [paymentId],
    );
    return rows[0]!.n;
  },

  async operationByKey(q: Queryable, paymentId: string, key: string): Promise<OperationRow | undefined> {
    const { rows } = await q.query<OperationRow>(
      `SELECT ${OP_COLS}, request_fingerprint FROM payment_operations WHERE payment_id = $1 AND idempotency_key = $2`,
      [paymentId, key],
    );
    return rows[0];
  },

  /** PENDING operations by kind and the age of the oldest (metrics; the partial index on PENDING). */
  async pendingOperations(q: Queryable): Promise<Array<{ kind: string; pending: number; oldest_seconds: number }>> {
    const { rows } = await q.query<{ kind: string; pending: number; oldest_seconds: number }>(
      `SELECT kind, count(*)::int AS pending, extract(epoch FROM now() - min(updated_at))::float8 AS oldest_seconds
         FROM payment_operations WHERE status = 'PENDING' GROUP BY kind`);
    return rows;
  },

  async operations(q: Queryable, paymentId: string): Promise<OperationRow[]> {
    const { rows } = await q.query<OperationRow>(
      `SELECT ${OP_COLS} FROM payment_operations WHERE payment_id = $1 ORDER BY created_at, id`,
      [paymentId],
    );
    return rows;
  },

  /**
   * Payments recovery must look at, unclaimed by any worker: left processing, with a
   * partner transaction left PENDING, or with an operation left PENDING (its children
   * may all be settled: the process died before it finalized the operation), for
   * longer than the grace period.
   */
  async stalePayments(q: Queryable, olderThanSeconds: number, limit: number): Promise<Array<{ id: string; entity_id: string }>> {
    const { rows } = await q.query<{ id: string; entity_id: string }>(
      `SELECT s.id, s.entity_id FROM (
         SELECT p.id, p.entity_id FROM payments p
          WHERE p.processing AND p.updated_at < now() - make_interval(secs => $1)
         UNION
         SELECT p.id, p.entity_id FROM partner_transactions t JOIN payments p ON p.id = t.payment_id
          WHERE t.status = 'PENDING' AND t.redirection IS NULL AND t.updated_at < now() - make_interval(secs => $1)
         UNION
         SELECT p.id, p.entity_id FROM payment_operations o JOIN payments p ON p.id = o.payment_id
          WHERE o.status = 'PENDING' AND o.updated_at < now() - make_interval(secs => $1)
       ) s
       WHERE NOT EXISTS (SELECT 1 FROM recovery_claims c WHERE c.payment_id = s.id AND c.until > now())
       LIMIT $2`,
      [olderThanSeconds, limit],
    );
    return rows;
  },

  /**
   * 3-D Secure challenges the shopper left: authorizations PENDING with a redirection,
   * recorded more than `olderThanSeconds` before `now` (the app clock), on payments no
   * recovery worker holds; oldest first. Read through the partial index of challenges
   * (migration 0040): the cost follows the challenges in flight, not the history.
   */
  async expiredChallenges(q: Queryable, now: Date, olderThanSeconds: number, limit: number): Promise<Array<{ id: string; entity_id: string }>> {
    const { rows } = await q.query<{ id: string; entity_id: string }>(
      `SELECT p.id, p.entity_id FROM partner_transactions t JOIN payments p ON p.id = t.payment_id
        WHERE t.status = 'PENDING' AND t.redirection IS NOT NULL AND t.created_at < $1::timestamptz - make_interval(secs => $2)
          AND NOT EXISTS (SELECT 1 FROM recovery_claims c WHERE c.payment_id = t.payment_id AND c.until > now())
        ORDER BY t.created_at
        LIMIT $3`,
      [now, olderThanSeconds, limit],
    );
    return rows;
  },

  /**
   * The 3-D Secure challenges awaiting the shopper at `now`, by age (metrics): how many
   * in each range that starts at one of `from` (seconds, ascending, the first 0; a
   * challenge recorded after `now` counts in the first), and the age of the oldest. The
   * partial index of challenges answers it.
   */
  async challengeAges(q: Queryable, now: Date, from: readonly number[]): Promise<{ counts: number[]; oldest_seconds: number }> {
    const { rows } = await q.query<{ bucket: number; n: number; oldest: number }>(
      `SELECT greatest(width_bucket(age, $2::float8[]), 1) AS bucket, count(*)::int AS n, max(age)::float8 AS oldest
         FROM (SELECT extract(epoch FROM $1::timestamptz - created_at)::float8 AS age FROM partner_transactions
                WHERE status = 'PENDING' AND redirection IS NOT NULL) c
        GROUP BY 1`,
      [now, from],
    );
    const counts = from.map(() => 0);
    for (const r of rows) counts[r.bucket - 1]! += r.n;
    return { counts, oldest_seconds: Math.max(0, ...rows.map((r) => r.oldest)) };
  },

  /**
   * Takes (or renews) the recovery claim on a payment for `seconds`: true when this
   * owner holds it now, false when another worker's claim is still running.
   */
  async claimRecovery(q: Queryable, paymentId: string, owner: string, seconds: number): Promise<boolean> {
    const { rows } = await q.query<{ payment_id: string }>(
      `INSERT INTO recovery_claims (payment_id, owner, until) VALUES ($1, $2, now() + make_interval(secs => $3))
       ON CONFLICT (payment_id) DO UPDATE SET owner = excluded.owner, until = excluded.until
        WHERE recovery_claims.until <= now() OR recovery_claims.owner = excluded.owner
       RETURNING payment_id`,
      [paymentId, owner, seconds],
    );
    return rows.length === 1;
  },

  async releaseRecovery(q: Queryable, paymentId: string, owner: string): Promise<void> {
    await q.query('DELETE FROM recovery_claims WHERE payment_id = $1 AND owner = $2', [paymentId, owner]);
  },
};
