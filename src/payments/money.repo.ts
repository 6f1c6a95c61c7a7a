// The one writer of money state: every statement that changes a payment's status,
// version or running totals, its ledger rows (partner_transactions) or its operations
// (payment_operations) is here, behind three functions that are the pipeline's three
// steps (docs/architecture.md, "The payments pipeline"):
//
//   reserve   what is decided before any partner is called: a new payment with its first
//             authorization row, the next part of a split, an operation with its PENDING
//             rows (or, when every partner answered inline, the whole outcome at once);
//   record    a partner's answer on a ledger row still PENDING (or, on an authorization
//             closed before its answer came, that late answer);
//   conclude  the payment's and its operations' next state with the events of the change
//             (the outcome of outcome.ts), in one statement when nobody touched the
//             payment since it was read, else under its row lock (with the release a
//             capture-once partner made, when the outcome has one).
//
// Each step is one function; the fast paths are statement shapes inside them (`shape`),
// not separate paths. Settlement (a read that syncs, recovery, late answers, partner
// notifications, reversals, expired challenges) records answers and concludes with the
// same functions. test/payments/one-writer.test.ts fails when SQL elsewhere writes these
// tables, and when a path leaves its sums to the database's totals triggers.
import type { Queryable } from '../platform/db/index.ts';
import { enqueueEvent, eventCtes, type NewEvent } from '../webhooks/outbox.ts';
import type { AuthorizationStatus, OperationStatus } from './common.schemas.ts';
import { type CountedRow, type LedgerSums, type ParentRow, SUM_COLS, ledgerTotals, settleSums } from './ledger-totals.ts';
import { type NewOperation, type NewPartnerTx, type NewPayment, type OperationRow, PAYMENT_COLS, type PartnerTxRow, type PaymentBase,
  type PaymentRow, type PaymentTotals, type TxUpdate, newTxRow } from './payments.repo.ts';

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

/**
 * A partner's answer applied to a ledger row still PENDING, by a statement that writes
 * the change's sums to the payment itself (settleSums): it moves the row's
 * sums_by_statement, so that the update trigger (kept for the rows a process of an
 * earlier version settles) leaves this change to the statement (migration 0032).
 */
const SETTLE_TX_COUNTED = `UPDATE partner_transactions SET status = $2, partner_reference = coalesce($3, partner_reference),
    partner_status = coalesce($4, partner_status), partner_status_description = coalesce($5, partner_status_description),
    status_code = coalesce($6, status_code), card = coalesce($7::jsonb, card),
    redirection = CASE WHEN $8::boolean THEN $9::jsonb ELSE redirection END,
    token_saved = coalesce($10, token_saved), updated_at = coalesce($11::timestamptz, now()), sums_by_statement = sums_by_statement + 1
  WHERE id = $1 AND status = 'PENDING'`;

/** SETTLE_TX_COUNTED's parameters; `at`, the time of the change (default the database's now()). */
const settleParams = (id: string, u: TxUpdate, at: Date | null = null) => [id, u.status, u.partner_reference ?? null, u.partner_status ?? null,
  u.partner_status_description ?? null, u.status_code ?? null, json(u.card), u.redirection !== undefined, json(u.redirection),
  u.token_saved ?? null, at];



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
// settleSums): every statement that inserts ledger rows or operations, or settles a
// ledger row, writes these sums itself, in the same statement, and marks the rows
// (sums_by_statement, counted_by_statement) so that the totals triggers leave them. The
// triggers (migrations 0031, 0032, 0043) count only the rows a process of an earlier
// version writes during a rolling upgrade; a later migration drops them.

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

/** The statements, one per shape; reached only through moneyWriter below. */
const statements = {
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
   * changes), with the settlement's sums (settleSums of `tx` against `parents`, its
   * authorization as stored) written to its payment in the same statement, the ledger
   * row before the payment (the lock order of every settlement); no write of the payment
   * when the change moves no sum. Returns the time of the change, or undefined when the
   * transaction was already settled (nothing written).
   */
  async settleTx(q: Queryable, tx: CountedRow, parents: readonly ParentRow[], u: TxUpdate): Promise<Date | undefined> {
    const sums = settleSums(tx, u.status, parents);
    const moves = SUM_COLS.some((c) => sums[c] !== 0);
    const { rows } = await q.query<{ updated_at: Date }>(sqlFor(`settleTx|${moves}`, () => moves
      ? `WITH t AS (${SETTLE_TX_COUNTED} RETURNING payment_id, updated_at),
         u AS (UPDATE payments SET ${addSql(12)} WHERE id = (SELECT payment_id FROM t))
         SELECT updated_at FROM t`
      : `${SETTLE_TX_COUNTED} RETURNING updated_at`),
    moves ? [...settleParams(tx.id, u), ...addParams(0, sums)] : settleParams(tx.id, u));
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
   * The reservation of an operation at the version read, in one statement: the
   * payment's next version, the operation (PENDING) and its PENDING ledger rows, written
   * only if the payment is still at `expectedVersion` (the amount check was made on it)
   * and no operation of the payment has the key. Returns the time of the reservation
   * (the database's, as under the row lock: recovery's grace period is counted from it),
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

  /**
   * The reservation of an operation under the row lock, in one statement: the operation
   * (PENDING), its PENDING ledger rows and the payment's next version. false when the
   * payment already has an operation with this idempotency key (nothing is written).
   * The payment's row takes the operation and the PENDING rows' sums in the same write
   * as its version (ledgerTotals).
   */
  async reserveOperation(q: Queryable, o: NewOperation, rows: NewPartnerTx[], parents: readonly ParentRow[]): Promise<Date | undefined> {
    const params: unknown[] = [o.id, o.payment_id, o.kind, o.amount, o.status, o.triggered_by, o.merchant_reference, o.reason, o.idempotency_key,
      ...newTxParams(rows)];
    const sumsAt = params.length + 1;
    params.push(...addParams(1, ledgerTotals(rows, parents)));
    params.push(o.request_fingerprint ?? null);
    const fingerprintAt = params.length;
    const { rows: out } = await q.query<{ created_at: Date }>(sqlFor(`reserveOperation|${rows.length}`, () =>
      `WITH o AS (
         INSERT INTO payment_operations (id, payment_id, kind, amount, status, triggered_by, merchant_reference, reason, idempotency_key, counted_by_statement,
           request_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, true, $${fingerprintAt})
         ON CONFLICT (payment_id, idempotency_key) DO NOTHING
         RETURNING created_at),
       t AS (INSERT INTO partner_transactions (${NEW_TX_COLS}, sums_by_statement) SELECT v.*, 1 FROM o, ${newTxValuesSql(rows.length, 10)}),
       u AS (UPDATE payments SET version = version + 1, updated_at = now(), ${addSql(sumsAt)} WHERE id = $2 AND EXISTS (SELECT 1 FROM o))
       SELECT created_at FROM o`), params);
    return out[0]?.created_at;
  },



  /**
   * Records on an authorization closed as ERROR or REFUSED the partner's answer that
   * arrived after it was closed (it is then reversed); false when the row is not such
   * an authorization any more.
   */
  async recordLateAnswer(q: Queryable, txId: string, u: TxUpdate): Promise<Date | undefined> {
    const { rows } = await q.query<{ updated_at: Date }>(
      `UPDATE partner_transactions SET partner_reference = $2, partner_status = $3, status_code = 'ANSWERED_LATE',
         partner_status_description = $4, updated_at = now()
        WHERE id = $1 AND kind = 'AUTHORIZATION' AND status IN ('ERROR', 'REFUSED') RETURNING updated_at`,
      [txId, u.partner_reference ?? null, u.partner_status ?? null,
        `The partner answered ${u.partner_status ?? u.status} after payd had closed the authorization; it was reversed`],
    );
    return rows[0]?.updated_at;
  },

  /**
   * The conclusion under the payment's row lock (the caller holds it): the operations
   * whose status moves, and the payment's next version with its authorization status
   * (and the end of its processing), in one statement; `at` is the time of the change on
   * every row.
   */
  async concludeLocked(q: Queryable, c: { paymentId: string; status: AuthorizationStatus; endProcessing: boolean;
    operations: Array<{ id: string; status: OperationStatus }>; at: Date }): Promise<void> {
    await q.query(
      `WITH o AS (UPDATE payment_operations x SET status = v.status, updated_at = $4
                   FROM unnest($5::uuid[], $6::text[]) AS v(id, status) WHERE x.id = v.id AND x.payment_id = $1)
       UPDATE payments SET version = version + 1, updated_at = $4, authorization_status = $2,
              processing = CASE WHEN $3::boolean THEN false ELSE processing END
        WHERE id = $1`,
      [c.paymentId, c.status, c.endProcessing, c.at, c.operations.map((o) => o.id), c.operations.map((o) => o.status)],
    );
  },
};

/** What reserve writes, by shape. */
export type Reservation =
  /** A payment whose partners all answered inline: the payment as concluded, its settled ledger rows and its event. */
  | { shape: 'payment, concluded'; payment: PaymentBase; txs: PartnerTxRow[]; event: NewEvent | undefined }
  /** A payment written ahead of its partner calls, with its first authorization row (PENDING). */
  | { shape: 'payment'; payment: NewPayment; first: NewPartnerTx }
  /** The next part of a split being created: its authorization row (PENDING), before its partner is called. */
  | { shape: 'part'; row: NewPartnerTx }
  /**
   * An operation whose partners all answered inline: written whole only if the payment is
   * still at the version of `payment` (an outcome that calls for a release is not written this way: conclude, 'locked').
   */
  | { shape: 'operation, concluded'; payment: PaymentRow; at: Date; op: OperationRow; txs: PartnerTxRow[]; parents: readonly ParentRow[]; event: NewEvent | undefined }
  /**
   * An operation (PENDING) and its PENDING rows: on the payment as read at
   * `expectedVersion` (optimistic), or, without it, under the payment's row lock that
   * the caller holds (a reversal is one: a SYSTEM void keyed by what it reverses).
   */
  | { shape: 'operation'; op: NewOperation; rows: NewPartnerTx[]; parents: readonly ParentRow[]; expectedVersion?: number };

/** What reserve returns, by shape: undefined when nothing was written (the key was taken, or the payment moved on). */
export interface Reserved {
  'payment, concluded': PaymentRow | undefined;
  payment: { payment: PaymentRow; tx: PartnerTxRow } | undefined;
  part: PartnerTxRow;
  'operation, concluded': PaymentRow | undefined;
  /** The time of the reservation (the database's: recovery's grace period counts from it). */
  operation: Date | undefined;
}

/** What record writes, by shape. */
export type Recording =
  /**
   * A partner's answer on a ledger row still PENDING (a settled row never changes), its
   * sums counted by the statement: `tx` as reserved, `parents` holding its authorization
   * as stored (for an operation row; an authorization row needs none).
   */
  | { shape: 'answer'; tx: CountedRow; parents: readonly ParentRow[]; update: TxUpdate }
  /** A partner's answer that came after payd closed the authorization as ERROR or REFUSED (it is then reversed). */
  | { shape: 'late answer'; txId: string; update: TxUpdate };

/** What conclude writes, by shape. */
export type Conclusion =
  /**
   * The end of a creation that nobody touched since it was written: its last ledger row
   * settled, the payment's status and next version, the event, in one statement, if the
   * payment is still at `expectedVersion` (else the row is settled all the same and the
   * caller concludes under the lock).
   */
  | { shape: 'creation'; tx: CountedRow; update: TxUpdate; paymentId: string; expectedVersion: number; status: AuthorizationStatus; at: Date; event: NewEvent | undefined }
  /** The end of an operation of one ledger row reserved at `expectedVersion`, as 'creation' ends a creation. */
  | { shape: 'operation'; tx: CountedRow; parents: readonly ParentRow[]; update: TxUpdate; paymentId: string; expectedVersion: number;
    operationId: string; status: OperationStatus; at: Date; event: NewEvent | undefined }
  /**
   * Under the payment's row lock (the caller's transaction holds it): the outcome of every
   * row as read under it, with the release it calls for, if any (ReleaseRecord).
   */
  | { shape: 'locked'; paymentId: string; status: AuthorizationStatus; endProcessing: boolean; operations: Array<{ id: string; status: OperationStatus }>;
    release?: ReleaseRecord | undefined; at: Date; events: NewEvent[] };

/**
 * The release of what a partner that captures once let go (outcome.ts, Release): its
 * SYSTEM void as settled and its settled rows, written with the conclusion, on `payment`
 * as read under the row lock (at its current version); `parents`, the authorizations it
 * releases. Its event is among the conclusion's.
 */
export interface ReleaseRecord { payment: PaymentRow; op: OperationRow; txs: PartnerTxRow[]; parents: readonly ParentRow[] }

export interface Concluded {
  /** Whether the payment took the conclusion (false: it moved on; the row is settled all the same). */
  creation: boolean;
  /** settled: the row took the answer; concluded: the operation and the payment did too. */
  operation: { settled: boolean; concluded: boolean };
  locked: void;
}

export const moneyWriter = {
  /** Step 1: what is decided before any partner is called (or the whole outcome, when every partner answered inline). */
  async reserve<R extends Reservation>(q: Queryable, r: R): Promise<Reserved[R['shape']]> {
    const x = r as Reservation;
    switch (x.shape) {
      case 'payment, concluded': return statements.insertConcluded(q, x.payment, x.txs, x.event) as Promise<Reserved[R['shape']]>;
      case 'payment': return statements.insertWithTx(q, x.payment, x.first) as Promise<Reserved[R['shape']]>;
      case 'part': return statements.insertTx(q, x.row, []) as Promise<Reserved[R['shape']]>;
      case 'operation, concluded': return statements.insertOperationConcluded(q, x.payment, x.at, x.op, x.txs, x.parents, x.event) as Promise<Reserved[R['shape']]>;
      case 'operation': return (x.expectedVersion === undefined
        ? statements.reserveOperation(q, x.op, x.rows, x.parents)
        : statements.reserveOperationAt(q, x.expectedVersion, x.op, x.rows, x.parents)) as Promise<Reserved[R['shape']]>;
    }
  },

  /** Step 2: a partner's answer. The time of the change, or undefined when the row was not in the state the shape expects. */
  async record(q: Queryable, r: Recording): Promise<Date | undefined> {
    return r.shape === 'answer' ? statements.settleTx(q, r.tx, r.parents, r.update) : statements.recordLateAnswer(q, r.txId, r.update);
  },

  /** Step 3: the payment's and its operations' next state, with the events of the change. */
  async conclude<C extends Conclusion>(q: Queryable, c: C): Promise<Concluded[C['shape']]> {
    const x = c as Conclusion;
    switch (x.shape) {
      case 'creation': return statements.settleTxAndConclude(q, x.tx, x.update, x.paymentId, x.expectedVersion, x.status, x.at, x.event) as Promise<Concluded[C['shape']]>;
      case 'operation': return statements.concludeOperation(q, x) as Promise<Concluded[C['shape']]>;
      case 'locked': {
        // (Under the row lock the version read is the current one: the release always applies.)
        const r = x.release;
        if (r && !(await statements.insertOperationConcluded(q, r.payment, x.at, r.op, r.txs, r.parents, undefined))) {
          throw new Error(`payment ${x.paymentId} moved under its row lock`);
        }
        await statements.concludeLocked(q, x);
        for (const e of x.events) await enqueueEvent(q, e);
        return undefined as Concluded[C['shape']];
      }
    }
  },
};
