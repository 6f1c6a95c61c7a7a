// The one money-invariants checker of the tests (fault scenarios, concurrency, processes),
// read straight from the database: payd's ledger (partner_transactions), what the
// simulated partners hold (sim_partner_operations) and the running totals stored on each
// payment row. Totals are always computed by the running-totals rule itself (ledgerTotals,
// src/payments/ledger-totals.ts), never by a copy of it here.
//   - moneyInvariants: every violation as a sentence naming the payment and the rule;
//   - checkInvariants: the same family asserted, once recovery settled, with the API's
//     amounts and the captures acknowledged to a client (the database fault scenarios);
//   - storedTotalsDiffering, apiAgreesWithLedger: the parts on their own.
import assert from 'node:assert/strict';
import type { Queryable } from '../../src/platform/db/index.ts';
import { type CountedRow, SUM_COLS, ledgerTotals } from '../../src/payments/ledger-totals.ts';
import type { TestDb } from './db.ts';
import { call } from './processes.ts';
import { waitFor } from './wait.ts';

export interface LedgerTotals {
  authorized: number;
  captured: number;
  voided: number;
  refunded: number;
  pending: number;
}

export interface InvariantReport {
  payments: number;
  /** Partner transactions and operations still PENDING. */
  pending: number;
  violations: string[];
  /** Ledger totals by payment id, to compare with what the API answers. */
  ledger: Map<string, LedgerTotals>;
}

/** Partner statuses that mean money is held or moved at the partner. */
const PARTNER_MOVED = new Set(['AUTHORIZED', 'SUCCEEDED']);
/** payd ledger statuses that mean the same. */
const PAYD_MOVED = new Set(['AUTHORIZED', 'SUCCESS']);

/** Every ledger row of every payment, with its payment's PENDING operations, in one statement (one snapshot). */
async function ledgers(db: Pick<Queryable, 'query'>): Promise<Map<string, { rows: CountedRow[]; pendingOps: number; operations: number }>> {
  const { rows } = await db.query<{ payment_id: string; rows: CountedRow[] | null; pending_ops: string; operations: string }>(
    `SELECT p.id AS payment_id,
            (SELECT json_agg(json_build_object('id', t.id, 'kind', t.kind, 'status', t.status, 'amount', t.amount, 'parent_id', t.parent_id))
               FROM partner_transactions t WHERE t.payment_id = p.id) AS rows,
            (SELECT count(*) FROM payment_operations o WHERE o.payment_id = p.id AND o.status = 'PENDING') AS pending_ops,
            (SELECT count(*) FROM payment_operations o WHERE o.payment_id = p.id) AS operations
       FROM payments p`);
  return new Map(rows.map((r) => [r.payment_id, {
    rows: (r.rows ?? []).map((t) => ({ ...t, amount: Number(t.amount) })), pendingOps: Number(r.pending_ops), operations: Number(r.operations),
  }]));
}

export async function moneyInvariants(db: Queryable): Promise<InvariantReport> {
  const violations: string[] = [];
  // The totals by the running-totals rule itself (ledgerTotals, the function the API's
  // amounts and the stored sums come from).
  const totals = [...(await ledgers(db))].map(([payment_id, l]) => {
    const s = ledgerTotals(l.rows);
    return { payment_id, authorized: s.total_authorized, captured: s.total_captured, voided: s.total_voided, refunded: s.total_refunded,
      pending: l.rows.filter((t) => t.status === 'PENDING').length, pending_ops: l.pendingOps };
  });
  // What is PENDING is counted in the same statement (one snapshot) as the totals: a
  // caller waits for nothing PENDING and then compares the totals with the API, so a
  // count read later than the totals would pass totals that miss the last settlement.
  let pending = 0;
  const ledger = new Map<string, LedgerTotals>();
  for (const r of totals) {
    pending += Number(r.pending) + Number(r.pending_ops);
    const l = { authorized: Number(r.authorized), captured: Number(r.captured), voided: Number(r.voided), refunded: Number(r.refunded), pending: Number(r.pending) };
    ledger.set(r.payment_id, l);
    if (l.captured + l.voided > l.authorized) violations.push(`payment ${r.payment_id}: captured ${l.captured} + voided ${l.voided} > authorized ${l.authorized}`);
    if (l.refunded > l.captured) violations.push(`payment ${r.payment_id}: refunded ${l.refunded} > captured ${l.captured}`);
  }

  // The same per authorization (each partner's own limit).
  const { rows: perAuth } = await db.query<{ id: string; payment_id: string; amount: string; taken: string; captured: string; refunded: string }>(
    `SELECT a.id, a.payment_id, a.amount,
            coalesce(sum(c.amount) FILTER (WHERE c.kind IN ('CAPTURE', 'VOID') AND c.status = 'SUCCESS'), 0) AS taken,
            coalesce(sum(c.amount) FILTER (WHERE c.kind = 'CAPTURE' AND c.status = 'SUCCESS'), 0) AS captured,
            coalesce(sum(c.amount) FILTER (WHERE c.kind = 'REFUND' AND c.status = 'SUCCESS'), 0) AS refunded
       FROM partner_transactions a LEFT JOIN partner_transactions c ON c.parent_id = a.id
      WHERE a.kind = 'AUTHORIZATION' AND a.status = 'AUTHORIZED'
      GROUP BY a.id, a.payment_id, a.amount`,
  );
  for (const a of perAuth) {
    if (Number(a.taken) > Number(a.amount)) violations.push(`payment ${a.payment_id}: authorization ${a.id} captured + voided ${a.taken} > ${a.amount}`);
    if (Number(a.refunded) > Number(a.captured)) violations.push(`payment ${a.payment_id}: authorization ${a.id} refunded ${a.refunded} > captured ${a.captured}`);
  }

  // payd and the partners agree on every key the partners recorded (inline answers keep
  // no partner record), and the partners moved no money under a key payd does not know.
  // One exception: an authorization payd closed (ERROR, REFUSED) that the partner approved
  // after all (ANSWERED_LATE) is AUTHORIZED at the partner, and must be voided there.
  const { rows: pairs } = await db.query<{ key: string; partner: string; sim_status: string; sim_amount: string; payd_status: string | null; payd_code: string | null; payd_amount: string | null; payment_id: string | null; voided: boolean }>(
    `SELECT s.key, s.partner, s.status AS sim_status, s.amount AS sim_amount,
            t.status AS payd_status, t.status_code AS payd_code, t.amount AS payd_amount, t.payment_id,
            EXISTS (SELECT 1 FROM sim_partner_operations v
                     WHERE v.partner = s.partner AND v.parent_ref = s.reference AND v.kind = 'VOID' AND v.status = 'SUCCEEDED') AS voided
       FROM sim_partner_operations s LEFT JOIN partner_transactions t ON t.partner_key = s.key AND t.partner = s.partner
      WHERE s.key <> ''`,
  );
  for (const p of pairs) {
    const moved = PARTNER_MOVED.has(p.sim_status);
    if (p.payd_status === null) {
      if (moved) violations.push(`${p.partner} key ${p.key}: the partner moved ${p.sim_amount} that payd has no record of`);
      continue;
    }
    if (p.payd_status === 'PENDING') continue; // counted below
    if (p.payd_code === 'ANSWERED_LATE' && p.sim_status === 'AUTHORIZED') {
      if (!p.voided) violations.push(`payment ${p.payment_id}: ${p.partner} key ${p.key} was approved late and is not reversed at the partner`);
      continue;
    }
    if (moved !== PAYD_MOVED.has(p.payd_status)) {
      violations.push(`payment ${p.payment_id}: ${p.partner} key ${p.key} is ${p.sim_status} at the partner but ${p.payd_status} in payd`);
    } else if (moved && Number(p.sim_amount) !== Number(p.payd_amount)) {
      violations.push(`payment ${p.payment_id}: ${p.partner} key ${p.key} moved ${p.sim_amount} at the partner, ${p.payd_amount} in payd`);
    }
  }

  // The running totals each payment row stores (what the amounts checks read under lock)
  // equal its ledger: a fault in a concurrent path or in recovery would show here first.
  for (const d of await storedTotalsDiffering(db)) violations.push(`payment ${d}: stored running total differs from the ledger`);

  return { payments: totals.length, pending, violations, ledger };
}

/** The API's amounts of a payment against its ledger totals: [] when they agree. */
export function apiAgreesWithLedger(paymentId: string, amounts: Record<string, number>, l: LedgerTotals | undefined): string[] {
  if (!l) return [`payment ${paymentId}: not in the ledger`];
  const out: string[] = [];
  const pairs: Array<[string, number]> = [['total_authorized', l.authorized], ['total_captured', l.captured], ['total_voided', l.voided], ['total_refunded', l.refunded]];
  for (const [field, want] of pairs) {
    if (amounts[field] !== want) out.push(`payment ${paymentId}: API ${field} ${amounts[field]} but ledger ${want}`);
  }
  return out;
}

/**
 * The running totals stored on each payment row (migrations 0015, 0017, 0031, 0032,
 * 0043) against the sums of its ledger by the running-totals rule (ledgerTotals) and its
 * operation count: [] when they agree, else one "id column stored≠ledger" per difference.
 */
export async function storedTotalsDiffering(db: Pick<Queryable, 'query'>): Promise<string[]> {
  // (One statement: the stored sums and the ledger rows of one snapshot.)
  const { rows } = await db.query<Record<string, string | number> & { id: string; rows: CountedRow[] | null; l_operation_count: number }>(
    `SELECT p.id, p.operation_count, ${SUM_COLS.map((c) => `p.${c}`).join(', ')},
       (SELECT count(*) FROM payment_operations o WHERE o.payment_id = p.id)::int AS l_operation_count,
       (SELECT json_agg(json_build_object('id', t.id, 'kind', t.kind, 'status', t.status, 'amount', t.amount, 'parent_id', t.parent_id))
          FROM partner_transactions t WHERE t.payment_id = p.id) AS rows
     FROM payments p`);
  const out: string[] = [];
  for (const r of rows) {
    const want: Record<string, number> = { operation_count: Number(r.l_operation_count), ...ledgerTotals((r.rows ?? []).map((t) => ({ ...t, amount: Number(t.amount) }))) };
    for (const [col, v] of Object.entries(want)) {
      if (Number(r[col]) !== v) out.push(`${r.id} ${col} ${r[col]}≠${v}`);
    }
  }
  return out;
}

/**
 * Captures the client was told succeeded (200), by payment: the ledger must hold at least
 * these, whatever happened to the database afterwards.
 */
export type Acknowledged = Map<string, number>;

export interface Invariants {
  payments: number;
  captured: number;
}

/**
 * Waits until no partner transaction is PENDING (recovery settles those a fault left),
 * then checks every payment of the database: captured + voided <= authorized, refunded
 * <= captured (per authorization too), each SUCCESS operation equals its ledger rows, the
 * API amounts equal the ledger, and every capture acknowledged to the client is there.
 */
export async function checkInvariants(t: TestDb, base: string, auth: Record<string, string>, acknowledged: Acknowledged): Promise<Invariants> {
  await waitFor(async () => {
    const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM partner_transactions WHERE status = 'PENDING'`);
    return rows[0]!.n === 0;
  }, { timeout: 60_000, every: 200, what: 'recovery to settle every PENDING partner transaction' });
  const { rows: txs } = await t.db.query<CountedRow & { payment_id: string; operation_id: string | null }>(
    'SELECT id, payment_id, operation_id, parent_id, kind, status, amount FROM partner_transactions',
  );
  const { rows: ops } = await t.db.query<{ id: string; payment_id: string; status: string; amount: number }>('SELECT id, payment_id, status, amount FROM payment_operations');
  const { rows: payments } = await t.db.query<{ id: string }>('SELECT id FROM payments');
  let captured = 0;
  for (const p of payments) {
    const mine = txs.filter((x) => x.payment_id === p.id).map((x) => ({ ...x, amount: Number(x.amount) }));
    const s = ledgerTotals(mine);
    const ledger = { total_authorized: s.total_authorized, total_captured: s.total_captured, total_voided: s.total_voided, total_refunded: s.total_refunded };
    captured += ledger.total_captured;
    assert.ok(ledger.total_captured + ledger.total_voided <= ledger.total_authorized, `payment ${p.id}: ${JSON.stringify(ledger)}`);
    assert.ok(ledger.total_refunded <= ledger.total_captured, `payment ${p.id}: ${JSON.stringify(ledger)}`);
    for (const a of mine.filter((x) => x.kind === 'AUTHORIZATION' && x.status === 'AUTHORIZED')) {
      const children = mine.filter((x) => x.parent_id === a.id && x.status === 'SUCCESS' && (x.kind === 'CAPTURE' || x.kind === 'VOID'));
      assert.ok(children.reduce((sum, x) => sum + x.amount, 0) <= a.amount, `authorization ${a.id} over-drawn`);
    }
    for (const op of ops.filter((o) => o.payment_id === p.id && o.status === 'SUCCESS')) {
      const drawn = mine.filter((x) => x.operation_id === op.id && x.status === 'SUCCESS').reduce((sum, x) => sum + x.amount, 0);
      assert.equal(drawn, op.amount, `operation ${op.id}: ledger ${drawn}, operation ${op.amount}`);
    }
    assert.ok(ledger.total_captured >= (acknowledged.get(p.id) ?? 0), `payment ${p.id}: acknowledged ${acknowledged.get(p.id)}, ledger ${ledger.total_captured}`);
    const api = await call(base, 'GET', `/v2/payments/${p.id}`, { ...auth, 'cache-control': 'max-age=0' });
    assert.equal(api.status, 200);
    for (const [k, v] of Object.entries(ledger)) assert.equal(api.body!.amounts[k], v, `payment ${p.id}: API ${k}`);
  }
  assert.deepEqual(await storedTotalsDiffering(t.db), [], 'the running totals stored on each payment equal its ledger');
  return { payments: payments.length, captured };
}

// ---- one payment, as the API and the partner show it (the concurrency tests) ----

/** What the simulated acquirer itself recorded for the authorization of a payment: the partner's view. */
async function partnerLedger(db: Pick<Queryable, 'query'>, authorizationReference: string): Promise<Record<string, { n: number; total: number }>> {
  const { rows } = await db.query<{ kind: string; n: number; total: number }>(
    `SELECT kind, count(*)::int AS n, coalesce(sum(amount), 0)::int AS total FROM sim_partner_operations
      WHERE parent_ref = $1 AND status = 'SUCCEEDED' GROUP BY kind`,
    [authorizationReference],
  );
  return Object.fromEntries(rows.map((r) => [r.kind, { n: Number(r.n), total: Number(r.total) }]));
}

/**
 * What the partner did for an authorization, by kind. A partner that keeps records (the
 * simulators with PAYD_SIM_INLINE=false, like any partner across the network): its own
 * ledger. A partner answering inline keeps records only of the calls that took the
 * regular path (a request that lost the optimistic version race goes there, under the
 * row lock): each of those must be a successful transaction in payd's ledger, and payd's
 * ledger is the record of the rest.
 */
export async function partnerDid(db: Pick<Queryable, 'query'>, inline: boolean, paymentId: string, authorizationReference: string): Promise<Record<string, { n: number; total: number }>> {
  if (!inline) return partnerLedger(db, authorizationReference);
  const { rows: recorded } = await db.query<{ key: string }>(
    `SELECT key FROM sim_partner_operations WHERE parent_ref = $1 AND status = 'SUCCEEDED'`, [authorizationReference]);
  const { rows: ours } = await db.query<{ partner_key: string }>(
    `SELECT partner_key FROM partner_transactions WHERE payment_id = $1 AND kind <> 'AUTHORIZATION' AND status = 'SUCCESS'`, [paymentId]);
  const known = new Set(ours.map((r) => r.partner_key));
  for (const r of recorded) assert.ok(known.has(r.key), `the partner did ${r.key}, which payd's ledger does not show as succeeded`);
  const { rows } = await db.query<{ kind: string; n: number; total: number }>(
    `SELECT kind, count(*)::int AS n, coalesce(sum(amount), 0)::int AS total FROM partner_transactions
      WHERE payment_id = $1 AND kind <> 'AUTHORIZATION' AND status = 'SUCCESS' GROUP BY kind`,
    [paymentId],
  );
  return Object.fromEntries(rows.map((r) => [r.kind, { n: Number(r.n), total: Number(r.total) }]));
}

export function assertConsistent(p: Record<string, any>): void {
  const a = p.amounts;
  assert.ok(a.total_captured + a.total_voided <= a.total_authorized, `captured ${a.total_captured} + voided ${a.total_voided} <= authorized ${a.total_authorized}`);
  assert.ok(a.total_refunded <= a.total_captured);
  // (Nothing in flight, checked below: what is available is the balance, in an AUTHORIZED payment only; transitions.ts.)
  const on = p.authorization.status === 'AUTHORIZED';
  assert.equal(a.available_to_capture, on ? a.total_authorized - a.total_captured - a.total_voided : 0);
  assert.equal(a.available_to_void, a.available_to_capture);
  assert.equal(a.available_to_refund, on ? a.total_captured - a.total_refunded : 0);
  const sum = (ops: any[]) => ops.filter((o) => o.status === 'SUCCESS').reduce((s, o) => s + o.amount, 0);
  assert.equal(sum(p.captures), a.total_captured);
  assert.equal(sum(p.voids), a.total_voided);
  assert.equal(sum(p.refunds), a.total_refunded);
  for (const o of [...p.captures, ...p.voids, ...p.refunds]) assert.notEqual(o.status, 'PENDING', `operation ${o.id} left PENDING`);
}
