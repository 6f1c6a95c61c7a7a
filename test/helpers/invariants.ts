// The money invariants every fault scenario checks afterwards, read straight from the
// database: payd's ledger (partner_transactions), what the simulated partners hold
// (sim_partner_operations) and the running totals stored on each payment row. A
// violation is a sentence naming the payment and the rule.
import type { Queryable } from '../../src/platform/db/index.ts';

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

export async function moneyInvariants(db: Queryable): Promise<InvariantReport> {
  const violations: string[] = [];
  const { rows: totals } = await db.query<{ payment_id: string; authorized: string; captured: string; voided: string; refunded: string; pending: string; pending_ops: string }>(
    `SELECT p.id AS payment_id,
            coalesce(sum(t.amount) FILTER (WHERE t.kind = 'AUTHORIZATION' AND t.status = 'AUTHORIZED'), 0) AS authorized,
            coalesce(sum(t.amount) FILTER (WHERE t.kind = 'CAPTURE' AND t.status = 'SUCCESS'), 0) AS captured,
            coalesce(sum(t.amount) FILTER (WHERE t.kind = 'VOID' AND t.status = 'SUCCESS'), 0) AS voided,
            coalesce(sum(t.amount) FILTER (WHERE t.kind = 'REFUND' AND t.status = 'SUCCESS'), 0) AS refunded,
            count(t.id) FILTER (WHERE t.status = 'PENDING') AS pending,
            (SELECT count(*) FROM payment_operations o WHERE o.payment_id = p.id AND o.status = 'PENDING') AS pending_ops
       FROM payments p LEFT JOIN partner_transactions t ON t.payment_id = p.id
      GROUP BY p.id`,
  );
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
  const { rows: pairs } = await db.query<{ key: string; partner: string; sim_status: string; sim_amount: string; payd_status: string | null; payd_amount: string | null; payment_id: string | null }>(
    `SELECT s.key, s.partner, s.status AS sim_status, s.amount AS sim_amount,
            t.status AS payd_status, t.amount AS payd_amount, t.payment_id
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
 * The running totals stored on each payment row (migrations 0015, 0017, 0031, 0032)
 * against the sums of its ledger and its operation count: [] when they agree, else one
 * "id column stored≠ledger" per difference.
 */
export async function storedTotalsDiffering(db: Pick<Queryable, 'query'>): Promise<string[]> {
  const { rows } = await db.query<Record<string, string | number>>(
    `SELECT p.id,
       p.operation_count, (SELECT count(*) FROM payment_operations o WHERE o.payment_id = p.id)::int AS l_operation_count,
       p.authorize_pending, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'AUTHORIZATION' AND t.status = 'PENDING'), 0) AS l_authorize_pending,
       p.total_authorized, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'AUTHORIZATION' AND t.status = 'AUTHORIZED'), 0) AS l_total_authorized,
       p.total_captured, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'CAPTURE' AND t.status = 'SUCCESS'), 0) AS l_total_captured,
       p.total_voided, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'VOID' AND t.status = 'SUCCESS'), 0) AS l_total_voided,
       p.total_refunded, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'REFUND' AND t.status = 'SUCCESS'), 0) AS l_total_refunded,
       p.reserved_capture, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'CAPTURE' AND t.status = 'PENDING'), 0) AS l_reserved_capture,
       p.reserved_void, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'VOID' AND t.status = 'PENDING'), 0) AS l_reserved_void,
       p.reserved_refund, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'REFUND' AND t.status = 'PENDING'), 0) AS l_reserved_refund
     FROM payments p LEFT JOIN partner_transactions t ON t.payment_id = p.id GROUP BY p.id`);
  const out: string[] = [];
  for (const r of rows) {
    for (const k of Object.keys(r).filter((c) => c.startsWith('l_'))) {
      const col = k.slice(2);
      if (Number(r[col]) !== Number(r[k])) out.push(`${r.id} ${col} ${r[col]}≠${r[k]}`);
    }
  }
  return out;
}
