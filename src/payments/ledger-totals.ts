// The running-totals rule: what the rows of a payment's ledger (partner_transactions)
// add up to. It is written once, here. The Payment's amounts (payment-view.ts: totalsOf,
// reservedOf, slicesOf), the sums the statements write on the payment row
// (money.repo.ts: ledgerTotals, settleSums, restingTotals) and the test helpers that
// check the stored sums (test/helpers/invariants.ts) all call it. The database keeps its
// own copy for the rows no statement counts (the triggers' payd_ledger_totals, migration
// 0043); test/payments/totals-rule.test.ts shows the two agree on generated ledgers.
//
// The rule, one row at a time:
// * an AUTHORIZATION counts in authorize_pending while PENDING, in total_authorized once
//   AUTHORIZED, nowhere otherwise (REFUSED, ERROR);
// * a CAPTURE, VOID or REFUND counts in reserved_<kind> while PENDING, in
//   total_<kind>(d) once SUCCESS, nowhere otherwise (FAILURE, ERROR, CONFLICT...);
// * but a CAPTURE, VOID or REFUND counts only against an authorization that counts as
//   authorized: the void that reverses an authorization the partner approved after payd
//   had closed it (ERROR or REFUSED, then ANSWERED_LATE) gives back what was never
//   counted as authorized, so it is part of no total, PENDING or settled.
import type { PartnerTxRow } from './payments.repo.ts';

/** A payment's running totals but its operation count: the sums of its ledger. */
export interface LedgerSums {
  authorize_pending: number;
  total_authorized: number;
  total_captured: number;
  total_voided: number;
  total_refunded: number;
  /** Amounts of operations in flight (ledger rows still PENDING), per kind. */
  reserved_capture: number;
  reserved_void: number;
  reserved_refund: number;
}

export const SUM_COLS = ['authorize_pending', 'total_authorized', 'total_captured', 'total_voided', 'total_refunded',
  'reserved_capture', 'reserved_void', 'reserved_refund'] as const satisfies ReadonlyArray<keyof LedgerSums>;

/** What the rule reads of a ledger row. */
export type CountedRow = Pick<PartnerTxRow, 'id' | 'kind' | 'status' | 'amount' | 'parent_id'>;

/** What the rule reads of an authorization that operation rows name. */
export type ParentRow = Pick<CountedRow, 'id' | 'status'>;

export const zeroSums = (): LedgerSums => ({
  authorize_pending: 0, total_authorized: 0, total_captured: 0, total_voided: 0, total_refunded: 0,
  reserved_capture: 0, reserved_void: 0, reserved_refund: 0,
});

/** Adds one row to `s` (the rule above); `parentCounts`: for an operation row, whether its authorization is AUTHORIZED. */
function addRow(s: LedgerSums, t: Pick<CountedRow, 'kind' | 'status' | 'amount'>, parentCounts: boolean): void {
  if (t.kind === 'AUTHORIZATION') {
    if (t.status === 'PENDING') s.authorize_pending += t.amount;
    else if (t.status === 'AUTHORIZED') s.total_authorized += t.amount;
    return;
  }
  if (!parentCounts) return;
  if (t.status === 'SUCCESS') {
    if (t.kind === 'CAPTURE') s.total_captured += t.amount;
    else if (t.kind === 'VOID') s.total_voided += t.amount;
    else s.total_refunded += t.amount;
  } else if (t.status === 'PENDING') {
    if (t.kind === 'CAPTURE') s.reserved_capture += t.amount;
    else if (t.kind === 'VOID') s.reserved_void += t.amount;
    else s.reserved_refund += t.amount;
  }
}

/**
 * The sums of `rows`. An operation row's authorization is looked up among `rows`, then
 * among `parents` (the authorizations already stored, when `rows` are only the new rows
 * of one statement); a row naming an authorization found in neither is a programming
 * error (a RangeError), never counted by a guess.
 */
export function ledgerTotals(rows: readonly CountedRow[], parents: readonly ParentRow[] = []): LedgerSums {
  const s = zeroSums();
  let byId: Map<string, ParentRow> | undefined;
  for (const t of rows) {
    let parentCounts = true;
    if (t.kind !== 'AUTHORIZATION') {
      byId ??= new Map([...parents, ...rows.filter((r) => r.kind === 'AUTHORIZATION')].map((r) => [r.id, r]));
      const parent = t.parent_id === null ? undefined : byId.get(t.parent_id);
      if (!parent) throw new RangeError(`ledger row ${t.id} (${t.kind}) names authorization ${t.parent_id}, which was not given`);
      parentCounts = parent.status === 'AUTHORIZED';
    }
    addRow(s, t, parentCounts);
  }
  return s;
}

/**
 * What a PENDING ledger row settling to `status` changes in its payment's sums (the
 * update trigger's rules): out of its PENDING sum, into the sum of its new status.
 */
export function settleSums(t: CountedRow, status: PartnerTxRow['status'], parents: readonly ParentRow[] = []): LedgerSums {
  const before = ledgerTotals([{ ...t, status: 'PENDING' }], parents);
  const after = ledgerTotals([{ ...t, status }], parents);
  for (const c of SUM_COLS) after[c] -= before[c];
  return after;
}
