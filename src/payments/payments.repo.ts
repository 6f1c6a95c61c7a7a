// SQL for payments, their operations and the partner-transaction ledger.
import type { Queryable } from '../platform/db/index.ts';
import { eventCtes, type NewEvent } from '../webhooks/outbox.ts';
import type { AuthorizationStatus, CaptureModeValue, OperationStatus, Trigger, TxStatus } from './common.schemas.ts';
import { type CountedRow, type LedgerSums, type ParentRow, SUM_COLS, ledgerTotals, settleSums } from './ledger-totals.ts';

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

export interface PartnerTxRow {
  id: string;
  payment_id: string;
  operation_id: string | null;
  parent_id: string | null;
  kind: TxKind;
  seq: number;
  partner: string;
  method: string;
  amount: number;
  status: TxStatus;
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

const PAYMENT_COLS = `id, entity_id, version, amount, currency, capture_mode, allow_future_usage, client_session_id,
  order_reference, "order", customer, browser, split, authorization_status, processing, idempotency_key, created_at, updated_at,
  operation_count, authorize_pending, total_authorized, total_captured, total_voided, total_refunded, reserved_capture, reserved_void, reserved_refund`;
const TX_COLS = `id, payment_id, operation_id, parent_id, kind, seq, partner, method, amount, status, partner_key,
  partner_reference, partner_status, partner_status_description, status_code, card, redirection, save_token, token_saved,
  created_at, updated_at`;
const OP_COLS = 'id, payment_id, kind, amount, status, triggered_by, merchant_reference, reason, idempotency_key, created_at, updated_at';

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

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

/** A partner's answer applied to a ledger row still PENDING, with extra SET terms. */
const settleTxSql = (extra: string) => `UPDATE partner_transactions SET status = $2, partner_reference = coalesce($3, partner_reference),
    partner_status = coalesce($4, partner_status), partner_status_description = coalesce($5, partner_status_description),
    status_code = coalesce($6, status_code), card = coalesce($7::jsonb, card),
    redirection = CASE WHEN $8::boolean THEN $9::jsonb ELSE redirection END,
    token_saved = coalesce($10, token_saved), updated_at = coalesce($11::timestamptz, now())${extra}
  WHERE id = $1 AND status = 'PENDING'`;

/** The settlement whose sums the update trigger counts. */
const SETTLE_TX = settleTxSql('');

/**
 * The settlement for a statement that writes the change's sums to the payment itself
 * (settleSums): it moves the row's sums_by_statement, so that the update trigger leaves
 * this change to the statement (migration 0032).
 */
const SETTLE_TX_COUNTED = settleTxSql(', sums_by_statement = sums_by_statement + 1');

/** SETTLE_TX's parameters; `at`, the time of the change (default the database's now()). */
const settleParams = (id: string, u: TxUpdate, at: Date | null = null) => [id, u.status, u.partner_reference ?? null, u.partner_status ?? null,
  u.partner_status_description ?? null, u.status_code ?? null, json(u.card), u.redirection !== undefined, json(u.redirection),
  u.token_saved ?? null, at];

// (Rows are built field by field: on Node 20, a spread followed by properties the source
// lacks, as in { ...t, created_at }, took 3-14 µs per object against 0.02 µs; measured.)
export function newTxRow(t: NewPartnerTx, created_at: Date, updated_at: Date): PartnerTxRow {
  return {
    id: t.id, payment_id: t.payment_id, operation_id: t.operation_id, parent_id: t.parent_id, kind: t.kind, seq: t.seq,
    partner: t.partner, method: t.method, amount: t.amount, status: t.status, partner_key: t.partner_key,
    partner_reference: null, partner_status: null, partner_status_description: null, status_code: null,
    card: t.card, redirection: null, save_token: t.save_token, token_saved: null, created_at, updated_at,
  };
}

/** The row as settleTx leaves it (the same coalescing as its SQL), for views built without re-reading. */
export function settledTxRow(t: PartnerTxRow, u: TxUpdate, updated_at: Date): PartnerTxRow {
  return {
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
  };
}

/** A ledger or operation row parsed from json_agg (its own fresh object): timestamps as Dates. */
function withDates<T extends { created_at: Date; updated_at: Date }>(r: T): T {
  r.created_at = new Date(r.created_at);
  r.updated_at = new Date(r.updated_at);
  return r;
}

const TX_INSERT_COLS = `id, payment_id, operation_id, parent_id, kind, seq, partner, method, amount, status, partner_key,
  partner_reference, partner_status, partner_status_description, status_code, card, redirection, save_token, token_saved,
  created_at, updated_at`;
const TX_CASTS = ['uuid', 'uuid', 'uuid', 'uuid', 'text', 'integer', 'text', 'text', 'bigint', 'text', 'text',
  'text', 'text', 'text', 'text', 'jsonb', 'jsonb', 'boolean', 'boolean', 'timestamptz', 'timestamptz'];

/** The parameters of complete ledger rows, in txValuesSql's order. */
function txParams(txs: PartnerTxRow[]): unknown[] {
  const params: unknown[] = [];
  for (const t of txs) {
    params.push(t.id, t.payment_id, t.operation_id, t.parent_id, t.kind, t.seq, t.partner, t.method, t.amount, t.status, t.partner_key,
      t.partner_reference, t.partner_status, t.partner_status_description, t.status_code, json(t.card), json(t.redirection),
      t.save_token, t.token_saved, t.created_at, t.updated_at);
  }
  return params;
}

/** `count` rows of `cols` as a typed VALUES list (parameters from `first`), for INSERT ... SELECT. */
function valuesSql(cols: string, casts: readonly string[], count: number, first: number): string {
  const tuples = Array.from({ length: count }, (_, i) => `(${casts.map((c, j) => `$${first + i * casts.length + j}::${c}`).join(', ')})`);
  return `(VALUES ${tuples.join(', ')}) AS v(${cols})`;
}

/** `count` complete ledger rows (txParams), for INSERT ... SELECT. */
function txValuesSql(count: number, first: number): string {
  return valuesSql(TX_INSERT_COLS, TX_CASTS, count, first);
}

const NEW_TX_COLS = 'id, payment_id, operation_id, parent_id, kind, seq, partner, method, amount, status, partner_key, card, save_token';
const NEW_TX_CASTS = ['uuid', 'uuid', 'uuid', 'uuid', 'text', 'integer', 'text', 'text', 'bigint', 'text', 'text', 'jsonb', 'boolean'];

/** The parameters of new ledger rows (their timestamps the database's), in newTxValuesSql's order. */
function newTxParams(rows: NewPartnerTx[]): unknown[] {
  const params: unknown[] = [];
  for (const t of rows) {
    params.push(t.id, t.payment_id, t.operation_id, t.parent_id, t.kind, t.seq, t.partner, t.method, t.amount, t.status, t.partner_key, json(t.card), t.save_token);
  }
  return params;
}

/** `count` new ledger rows (newTxParams; their timestamps the database's), for INSERT ... SELECT. */
function newTxValuesSql(count: number, first: number): string {
  return valuesSql(NEW_TX_COLS, NEW_TX_CASTS, count, first);
}

/** `WITH` list entries for an optional event gated on `gate`, and their parameters. */
function withEvent(event: NewEvent | undefined, first: number, gate: string): { sql: string; params: unknown[] } {
  if (!event) return { sql: '', params: [] };
  const e = eventCtes(event, first, gate);
  return { sql: `, ${e.sql}`, params: e.params };
}

/**
 * Statements whose text depends only on their shape (how many ledger rows, with or
 * without an event) are built once per shape: the same string each time, so the
 * prepared statement lookup hashes it once, and no SQL is rebuilt per request.
 */
const shaped = new Map<string, string>();
function sqlFor(shape: string, build: () => string): string {
  let sql = shaped.get(shape);
  if (sql === undefined) {
    sql = build();
    if (shaped.size < 100) shaped.set(shape, sql);
  }
  return sql;
}

// The sums of ledger rows are the running-totals rule of ledger-totals.ts (ledgerTotals,
// settleSums): the statements that insert ledger rows or operations write these sums
// themselves, in the same statement, and mark the rows (sums_by_statement 1,
// counted_by_statement true) so that the insert triggers, kept for the rows of a process
// of an earlier version during a rolling upgrade, leave them (migration 0031). A row's
// later changes of status or amount are counted by the update trigger (the database's
// copy of the rule, migration 0043), unless the statement making the change counts it
// (settleSums, migration 0032).
export type { LedgerSums } from './ledger-totals.ts';

/** `SET` terms adding operations and ledger sums to a payment, parameters from `first` on (addParams' order). */
function addSql(first: number): string {
  return ['operation_count', ...SUM_COLS].map((c, i) => `${c} = ${c} + $${first + i}`).join(', ');
}

/** The sums in SUM_COLS' order, as parameters. */
function sumValues(s: LedgerSums): number[] {
  return SUM_COLS.map((c) => s[c]);
}

/** addSql's parameters: the operations inserted, then the sums of the ledger rows inserted. */
function addParams(operations: number, s: LedgerSums): unknown[] {
  return [operations, ...sumValues(s)];
}

/** `p`'s totals with `operations` and `s` added, as a statement of addSql moved them. */
function added<T extends PaymentTotals>(p: T, operations: number, s: LedgerSums): T {
  const out = { ...p, operation_count: p.operation_count + operations };
  for (const c of SUM_COLS) out[c] += s[c];
  return out;
}

/**
 * The sums on the row of a payment, with one operation counted per operation: for a
 * state built without reading the row back (recent-payments.ts), after the statements
 * that wrote it.
 */
export function restingTotals(txs: PartnerTxRow[], ops: OperationRow[]): PaymentTotals {
  return { operation_count: ops.length, ...ledgerTotals(txs) };
}

/** Unique violation of payment_operations (payment_id, idempotency_key): another request took the key. */
export function isOperationKeyConflict(err: unknown): boolean {
  const e = err as { code?: string; constraint?: string; message?: string };
  return e?.code === '23505' && /payment_operations_payment_id_idempotency_key/.test(`${e.constraint ?? ''} ${e.message ?? ''}`);
}

export const paymentsRepo = {
  /**
   * A payment whose partners all answered inline, written whole in one statement: the
   * payment as concluded (with the sums of its ledger rows), its ledger rows, and its
   * event. Returns the payment row as written, or undefined when the entity already used
   * the idempotency key (nothing is written). The row is `p` with the sums the statement
   * wrote (restingTotals), not read back: the statement returns only the id, so that no
   * column (four of them JSON) is sent and parsed again.
   */
  async insertConcluded(q: Queryable, p: PaymentBase, txs: PartnerTxRow[], event: NewEvent | undefined): Promise<PaymentRow | undefined> {
    const sums = ledgerTotals(txs);
    const params: unknown[] = [p.id, p.entity_id, p.version, p.amount, p.currency, p.capture_mode, p.allow_future_usage, p.client_session_id,
      p.order_reference, json(p.order), json(p.customer), json(p.browser), json(p.split), p.authorization_status,
      p.processing, p.idempotency_key, p.created_at, p.updated_at, ...sumValues(sums), p.request_fingerprint ?? null];
    const first = params.length + 1;
    params.push(...txParams(txs));
    const e = withEvent(event, params.length + 1, 'p');
    params.push(...e.params);
    const { rows } = await q.query<{ id: string }>(sqlFor(`insertConcluded|${txs.length}|${e.sql !== ''}`, () =>
      `WITH p AS (
         INSERT INTO payments (id, entity_id, version, amount, currency, capture_mode, allow_future_usage, client_session_id,
           order_reference, "order", customer, browser, split, authorization_status, processing, idempotency_key, created_at, updated_at,
           ${SUM_COLS.join(', ')}, request_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)
         ON CONFLICT (entity_id, idempotency_key) DO NOTHING
         RETURNING id),
       t AS (INSERT INTO partner_transactions (${TX_INSERT_COLS}, sums_by_statement) SELECT v.*, 1 FROM p, ${txValuesSql(txs.length, first)})${e.sql}
       SELECT id FROM p`),
      params,
    );
    return rows.length === 1 ? { ...p, ...restingTotals(txs, []) } : undefined;
  },

  /**
   * An operation whose partners all answered inline, in one statement: the payment moves
   * to the next version only if nobody changed it since it was read (optimistic lock on
   * `version`, so the amount checks made on that version still hold), and the operation,
   * its ledger rows and its event are written only then. Returns the payment row as
   * written, or undefined on a version conflict (nothing written); throws a unique violation (isOperationKeyConflict) when
   * the idempotency key was taken meanwhile (nothing written either). The payment's
   * version, operation count and sums move in that one row write (ledgerTotals). `p` is the row at
   * the version read; the row returned is `p` moved as the statement moved it, not read
   * back (the write happened only if the row was still at that version).
   */
  async insertOperationConcluded(q: Queryable, p: PaymentRow, updatedAt: Date, o: OperationRow,
    txs: PartnerTxRow[], parents: readonly ParentRow[], event: NewEvent | undefined): Promise<PaymentRow | undefined> {
    const sums = ledgerTotals(txs, parents);
    const params: unknown[] = [p.id, p.version, updatedAt,
      o.id, o.kind, o.amount, o.status, o.triggered_by, o.merchant_reference, o.reason, o.idempotency_key, o.created_at, o.updated_at,
      ...addParams(1, sums)];
    params.push(o.request_fingerprint ?? null);
    const fingerprintAt = params.length;
    const first = params.length + 1;
    params.push(...txParams(txs));
    const e = withEvent(event, params.length + 1, 'u');
    params.push(...e.params);
    const { rows } = await q.query<{ id: string }>(sqlFor(`insertOperationConcluded|${txs.length}|${e.sql !== ''}`, () =>
      `WITH u AS (
         UPDATE payments SET version = version + 1, updated_at = $3, ${addSql(14)}
          WHERE id = $1 AND version = $2 RETURNING id),
       o AS (
         INSERT INTO payment_operations (id, payment_id, kind, amount, status, triggered_by, merchant_reference, reason, idempotency_key, created_at, updated_at,
           counted_by_statement, request_fingerprint)
         SELECT $4, u.id, $5, $6, $7, $8, $9, $10, $11, $12, $13, true, $${fingerprintAt} FROM u RETURNING id),
       t AS (INSERT INTO partner_transactions (${TX_INSERT_COLS}, sums_by_statement) SELECT v.*, 1 FROM o, ${txValuesSql(txs.length, first)})${e.sql}
       SELECT id FROM u`),
      params,
    );
    if (rows.length !== 1) return undefined;
    return { ...added(p, 1, sums), version: p.version + 1, updated_at: updatedAt };
  },

  /**
   * The payment and its first authorization row in one statement (the common case of
   * payment creation), the payment with that row's sums (ledgerTotals); undefined when the
   * entity already used the idempotency key.
   */
  async insertWithTx(q: Queryable, p: NewPayment, t: NewPartnerTx): Promise<{ payment: PaymentRow; tx: PartnerTxRow } | undefined> {
    const sums = ledgerTotals([t]);
    const { rows } = await q.query<PaymentRow & { tx_created_at: Date; tx_updated_at: Date }>(
      `WITH p AS (
         INSERT INTO payments (id, entity_id, amount, currency, capture_mode, allow_future_usage, client_session_id,
           order_reference, "order", customer, browser, split, authorization_status, processing, idempotency_key,
           ${SUM_COLS.join(', ')}, request_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $36)
         ON CONFLICT (entity_id, idempotency_key) DO NOTHING
         RETURNING ${PAYMENT_COLS}),
       t AS (
         INSERT INTO partner_transactions (id, payment_id, operation_id, parent_id, kind, seq, partner, method, amount, status, partner_key, card, save_token,
           sums_by_statement)
         SELECT $24, p.id, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, 1 FROM p
         RETURNING created_at, updated_at)
       SELECT p.*, t.created_at AS tx_created_at, t.updated_at AS tx_updated_at FROM p, t`,
      [p.id, p.entity_id, p.amount, p.currency, p.capture_mode, p.allow_future_usage, p.client_session_id,
        p.order_reference, json(p.order), json(p.customer), json(p.browser), json(p.split), p.authorization_status,
        p.processing, p.idempotency_key, ...sumValues(sums),
        t.id, t.operation_id, t.parent_id, t.kind, t.seq, t.partner, t.method, t.amount, t.status, t.partner_key, json(t.card), t.save_token,
        p.request_fingerprint ?? null],
    );
    const row = rows[0];
    if (!row) return undefined;
    const { tx_created_at, tx_updated_at, ...payment } = row;
    return { payment, tx: newTxRow(t, tx_created_at, tx_updated_at) };
  },

  async get(q: Queryable, entityId: string, id: string, lock = false): Promise<PaymentRow | undefined> {
    const { rows } = await q.query<PaymentRow>(
      `SELECT ${PAYMENT_COLS} FROM payments WHERE id = $1 AND entity_id = $2${lock ? ' FOR UPDATE' : ''}`,
      [id, entityId],
    );
    return rows[0];
  },

  /** The payment with its ledger and operations in one round trip (reads without a lock). */
  async getWithLedger(q: Queryable, entityId: string, id: string): Promise<{ payment: PaymentRow; txs: PartnerTxRow[]; ops: OperationRow[] } | undefined> {
    const { rows } = await q.query<PaymentRow & { txs: PartnerTxRow[]; ops: OperationRow[] }>(
      `SELECT ${PAYMENT_COLS},
         coalesce((SELECT json_agg(t ORDER BY t.seq) FROM (SELECT ${TX_COLS} FROM partner_transactions WHERE payment_id = p.id) t), '[]') AS txs,
         coalesce((SELECT json_agg(o ORDER BY o.created_at, o.id) FROM (SELECT ${OP_COLS} FROM payment_operations WHERE payment_id = p.id) o), '[]') AS ops
       FROM payments p WHERE id = $1 AND entity_id = $2`,
      [id, entityId],
    );
    const row = rows[0];
    if (!row) return undefined;
    const { txs, ops, ...payment } = row;
    return { payment, txs: txs.map(withDates), ops: ops.map(withDates) };
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
   * Keeps the view built from the payment at `version`, unless the payment moved on
   * meanwhile. Only for a payment at rest (nothing PENDING, not processing): at rest, a
   * payment changes only through statements that move its version, so the view stays
   * exact for as long as the version does.
   */
  async saveView(q: Queryable, id: string, version: number, format: string, view: string): Promise<void> {
    // (Readers racing on a new version: the first one writes, the others find it done.)
    // A row locked by a change under way is left as it is (SKIP LOCKED): a read never
    // waits for a lock, and that change moves the version anyway.
    await q.query(
      `UPDATE payments SET view = $3, view_version = $2, view_format = $4
        WHERE id = (SELECT id FROM payments WHERE id = $1 FOR UPDATE SKIP LOCKED)
          AND version = $2 AND (view_version IS DISTINCT FROM $2 OR view_format IS DISTINCT FROM $4)`,
      [id, version, view, format],
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

  /** Records a change: new authorization status and/or end of processing; version + 1. */
  async touch(q: Queryable, id: string, change: { authorization_status?: string; processing?: boolean } = {}): Promise<void> {
    await q.query(
      `UPDATE payments SET version = version + 1, updated_at = now(),
         authorization_status = coalesce($2, authorization_status), processing = coalesce($3, processing)
       WHERE id = $1`,
      [id, change.authorization_status ?? null, change.processing ?? null],
    );
  },

  /** One ledger row, added to its payment's sums in the same statement (ledgerTotals). */
  async insertTx(q: Queryable, t: NewPartnerTx, parents: readonly ParentRow[]): Promise<PartnerTxRow> {
    const { rows } = await q.query<{ created_at: Date; updated_at: Date }>(
      `WITH t AS (
         INSERT INTO partner_transactions (id, payment_id, operation_id, parent_id, kind, seq, partner, method, amount, status, partner_key, card, save_token,
           sums_by_statement)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 1) RETURNING created_at, updated_at),
       u AS (UPDATE payments SET ${addSql(14)} WHERE id = $2)
       SELECT created_at, updated_at FROM t`,
      [t.id, t.payment_id, t.operation_id, t.parent_id, t.kind, t.seq, t.partner, t.method, t.amount, t.status, t.partner_key, json(t.card), t.save_token,
        ...addParams(0, ledgerTotals([t], parents))],
    );
    return newTxRow(t, rows[0]!.created_at, rows[0]!.updated_at);
  },

  /**
   * Applies a partner answer to a transaction still PENDING (a settled transaction never
   * changes); returns the time of the change, or undefined when it was already settled.
   */
  async settleTx(q: Queryable, id: string, u: TxUpdate): Promise<Date | undefined> {
    const { rows } = await q.query<{ updated_at: Date }>(`${SETTLE_TX} RETURNING updated_at`, settleParams(id, u));
    return rows[0]?.updated_at;
  },

  /**
   * Settles the last partner transaction of a payment creation, records the outcome on
   * the payment and writes its event, in one statement, provided nobody changed the
   * payment since (version) and the transaction was still PENDING; `at` is the time of
   * the change on both rows. false: not applied to the payment and no event (the
   * transaction is settled all the same); the caller then recomputes under the row lock.
   * The settlement's sums (settleSums) are written by this statement whenever it settles
   * the transaction: in the conclusion's write of the payment, else (the payment moved
   * on) in a write of the sums alone. The ledger row is written before the payment, the
   * lock order of every settlement.
   */
  async settleTxAndConclude(q: Queryable, tx: CountedRow, u: TxUpdate, paymentId: string, expectedVersion: number,
    status: AuthorizationStatus, at: Date, event: NewEvent | undefined): Promise<boolean> {
    const params: unknown[] = [...settleParams(tx.id, u, at), status, paymentId, expectedVersion, ...addParams(0, settleSums(tx, u.status))];
    const e = withEvent(event, params.length + 1, 'u');
    params.push(...e.params);
    const { rows } = await q.query(sqlFor(`settleTxAndConclude|${e.sql !== ''}`, () =>
      `WITH t AS (${SETTLE_TX_COUNTED} RETURNING id),
       u AS (UPDATE payments SET authorization_status = $12, processing = false, version = version + 1, updated_at = $11, ${addSql(15)}
              WHERE id = $13 AND version = $14 AND EXISTS (SELECT 1 FROM t) RETURNING id),
       d AS (UPDATE payments SET ${addSql(15)} WHERE id = $13 AND EXISTS (SELECT 1 FROM t) AND NOT EXISTS (SELECT 1 FROM u))${e.sql}
       SELECT id FROM u`), params);
    return rows.length === 1;
  },

  /**
   * The reservation of an operation on the optimistic path, in one statement: the
   * payment's next version, the operation (PENDING) and its PENDING ledger rows, written
   * only if the payment is still at `expectedVersion` (the amount check was made on it)
   * and no operation of the payment has the key. Returns the time of the reservation
   * (the database's, as on the locked path: recovery's grace period is counted from it),
   * or undefined when nothing was written. The payment's row takes the operation and the
   * PENDING rows' sums in the same write (ledgerTotals). An operation of the payment that
   * took the key meanwhile makes the statement fail whole (a unique violation, nothing
   * written: undefined), never leave the sums moved without their rows.
   */
  async reserveOperationAt(q: Queryable, expectedVersion: number, o: NewOperation, rows: NewPartnerTx[], parents: readonly ParentRow[]): Promise<Date | undefined> {
    const params: unknown[] = [o.payment_id, expectedVersion, o.id, o.kind, o.amount, o.status, o.triggered_by, o.merchant_reference, o.reason, o.idempotency_key,
      ...newTxParams(rows)];
    const sumsAt = params.length + 1;
    params.push(...addParams(1, ledgerTotals(rows, parents)));
    params.push(o.request_fingerprint ?? null);
    const fingerprintAt = params.length;
    try {
      const { rows: out } = await q.query<{ created_at: Date }>(sqlFor(`reserveOperationAt|${rows.length}`, () =>
        `WITH u AS (
           UPDATE payments SET version = version + 1, updated_at = now(), ${addSql(sumsAt)}
            WHERE id = $1 AND version = $2
              AND ($10::text IS NULL OR NOT EXISTS (SELECT 1 FROM payment_operations WHERE payment_id = $1 AND idempotency_key = $10))
            RETURNING id),
         o AS (
           INSERT INTO payment_operations (id, payment_id, kind, amount, status, triggered_by, merchant_reference, reason, idempotency_key, counted_by_statement,
             request_fingerprint)
           SELECT $3, u.id, $4, $5, $6, $7, $8, $9, $10, true, $${fingerprintAt} FROM u
           RETURNING created_at),
         t AS (INSERT INTO partner_transactions (${NEW_TX_COLS}, sums_by_statement) SELECT v.*, 1 FROM o, ${newTxValuesSql(rows.length, 11)})
         SELECT created_at FROM o`), params);
      return out[0]?.created_at;
    } catch (err) {
      if (isOperationKeyConflict(err)) return undefined;
      throw err;
    }
  },

  /**
   * The end of an operation with one partner transaction, in one statement: the
   * transaction settled (if still PENDING), the payment's next version and the
   * operation's final status with its event (if the payment is still at
   * `expectedVersion`, the version its reservation left). `at` is the time of the change
   * on every row. settled: the transaction took this answer; concluded: the operation
   * and the payment did too (else the caller finalizes under the row lock). The
   * settlement's sums are written as settleTxAndConclude writes them.
   */
  async concludeOperation(q: Queryable, c: { tx: CountedRow; parents: readonly ParentRow[]; update: TxUpdate; paymentId: string; expectedVersion: number;
    operationId: string; status: OperationStatus; at: Date; event: NewEvent | undefined }): Promise<{ settled: boolean; concluded: boolean }> {
    const params: unknown[] = [...settleParams(c.tx.id, c.update, c.at), c.paymentId, c.expectedVersion, c.operationId, c.status,
      ...addParams(0, settleSums(c.tx, c.update.status, c.parents))];
    const e = withEvent(c.event, params.length + 1, 'o');
    params.push(...e.params);
    const { rows } = await q.query<{ settled: number; concluded: number }>(sqlFor(`concludeOperation|${e.sql !== ''}`, () =>
      `WITH s AS (${SETTLE_TX_COUNTED} RETURNING id),
       u AS (UPDATE payments SET version = version + 1, updated_at = $11, ${addSql(16)}
              WHERE id = $12 AND version = $13 AND EXISTS (SELECT 1 FROM s) RETURNING id),
       d AS (UPDATE payments SET ${addSql(16)} WHERE id = $12 AND EXISTS (SELECT 1 FROM s) AND NOT EXISTS (SELECT 1 FROM u)),
       o AS (UPDATE payment_operations SET status = $15, updated_at = $11
              WHERE id = $14 AND status = 'PENDING' AND EXISTS (SELECT 1 FROM u) RETURNING id)${e.sql}
       SELECT (SELECT count(*) FROM s)::int AS settled, (SELECT count(*) FROM o)::int AS concluded`), params);
    return { settled: rows[0]!.settled === 1, concluded: rows[0]!.concluded === 1 };
  },

  /** A partner's transaction by the key payd sent it (partner notifications), with its payment's entity. */
  async txByPartnerKey(q: Queryable, partner: string, key: string): Promise<{ id: string; kind: TxKind; payment_id: string; entity_id: string } | undefined> {
    const { rows } = await q.query<{ id: string; kind: TxKind; payment_id: string; entity_id: string }>(
      `SELECT t.id, t.kind, t.payment_id, p.entity_id FROM partner_transactions t JOIN payments p ON p.id = t.payment_id
        WHERE t.partner_key = $1 AND t.partner = $2`, [key, partner]);
    return rows[0];
  },

  /** A partner's PENDING captures of the authorization it knows by this reference (partner notifications). */
  async pendingCapturesOf(q: Queryable, partner: string, authorizationReference: string): Promise<{ id: string; kind: TxKind; payment_id: string; entity_id: string }[]> {
    const { rows } = await q.query<{ id: string; kind: TxKind; payment_id: string; entity_id: string }>(
      `SELECT c.id, c.kind, c.payment_id, p.entity_id FROM partner_transactions a
         JOIN partner_transactions c ON c.parent_id = a.id AND c.kind = 'CAPTURE' AND c.status = 'PENDING'
         JOIN payments p ON p.id = c.payment_id
        WHERE a.partner = $1 AND a.partner_reference = $2 AND a.kind = 'AUTHORIZATION'`, [partner, authorizationReference]);
    return rows;
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

  /**
   * The reservation of an operation on the locked path, in one statement: the operation
   * (PENDING), its PENDING ledger rows and the payment's next version. false when the
   * payment already has an operation with this idempotency key (nothing is written).
   * The payment's row takes the operation and the PENDING rows' sums in the same write
   * as its version (ledgerTotals).
   */
  async reserveOperation(q: Queryable, o: NewOperation, rows: NewPartnerTx[], parents: readonly ParentRow[]): Promise<boolean> {
    const params: unknown[] = [o.id, o.payment_id, o.kind, o.amount, o.status, o.triggered_by, o.merchant_reference, o.reason, o.idempotency_key,
      ...newTxParams(rows)];
    const sumsAt = params.length + 1;
    params.push(...addParams(1, ledgerTotals(rows, parents)));
    params.push(o.request_fingerprint ?? null);
    const fingerprintAt = params.length;
    const { rows: out } = await q.query<{ id: string }>(sqlFor(`reserveOperation|${rows.length}`, () =>
      `WITH o AS (
         INSERT INTO payment_operations (id, payment_id, kind, amount, status, triggered_by, merchant_reference, reason, idempotency_key, counted_by_statement,
           request_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, true, $${fingerprintAt})
         ON CONFLICT (payment_id, idempotency_key) DO NOTHING
         RETURNING id),
       t AS (INSERT INTO partner_transactions (${NEW_TX_COLS}, sums_by_statement) SELECT v.*, 1 FROM o, ${newTxValuesSql(rows.length, 10)}),
       u AS (UPDATE payments SET version = version + 1, updated_at = now(), ${addSql(sumsAt)} WHERE id = $2 AND EXISTS (SELECT 1 FROM o))
       SELECT id FROM o`), params);
    return out.length === 1;
  },

  /** An operation without ledger rows yet (insertTx adds them), counted on its payment in the same statement. */
  async insertOperation(q: Queryable, o: NewOperation): Promise<OperationRow | undefined> {
    const { rows } = await q.query<OperationRow>(
      `WITH o AS (
         INSERT INTO payment_operations (id, payment_id, kind, amount, status, triggered_by, merchant_reference, reason, idempotency_key, counted_by_statement,
           request_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, true, $10)
         ON CONFLICT (payment_id, idempotency_key) DO NOTHING
         RETURNING ${OP_COLS}),
       u AS (UPDATE payments SET operation_count = operation_count + 1 WHERE id = $2 AND EXISTS (SELECT 1 FROM o))
       SELECT * FROM o`,
      [o.id, o.payment_id, o.kind, o.amount, o.status, o.triggered_by, o.merchant_reference, o.reason, o.idempotency_key, o.request_fingerprint ?? null],
    );
    return rows[0];
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

  async setOperationStatus(q: Queryable, id: string, status: OperationStatus): Promise<Date> {
    const { rows } = await q.query<{ updated_at: Date }>(`UPDATE payment_operations SET status = $2, updated_at = now() WHERE id = $1 RETURNING updated_at`, [id, status]);
    return rows[0]!.updated_at;
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

  /**
   * Records on an authorization closed as ERROR or REFUSED the partner's answer that
   * arrived after it was closed (it is then reversed); false when the row is not such
   * an authorization any more.
   */
  async recordLateAnswer(q: Queryable, txId: string, u: TxUpdate): Promise<boolean> {
    const { rowCount } = await q.query(
      `UPDATE partner_transactions SET partner_reference = $2, partner_status = $3, status_code = 'ANSWERED_LATE',
         partner_status_description = $4, updated_at = now()
        WHERE id = $1 AND kind = 'AUTHORIZATION' AND status IN ('ERROR', 'REFUSED')`,
      [txId, u.partner_reference ?? null, u.partner_status ?? null,
        `The partner answered ${u.partner_status ?? u.status} after payd had closed the authorization; it was reversed`],
    );
    return rowCount === 1;
  },
};
