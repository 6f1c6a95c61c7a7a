// The money invariants every fault scenario checks afterwards, read straight from the
// database: payd's ledger (partner_transactions), what the simulated partners hold
// (sim_partner_operations) and the running totals stored on each payment row. A
// violation is a sentence naming the payment and the rule.
import type { Queryable } from '../../src/platform/db/index.ts';
import { type CountedRow, SUM_COLS, ledgerTotals } from '../../src/payments/ledger-totals.ts';

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
