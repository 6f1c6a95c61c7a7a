// The payments this process wrote last, each as its own statements left it, so that the
// operation that commonly follows at once (a shop capturing a payment it just created)
// skips the read of the payment and its ledger.
//
// Never trusted alone. Only OperationsService.reserve reads it (its first reading), and
// its writes on it apply only at the version remembered (money.repo.ts reserve, shapes 'operation, concluded' and 'operation':
// WHERE version = $2). A payment is remembered only when nothing in it is PENDING, so
// nothing can settle without a new version: any later change starts with one that moves
// the version (an operation's reservation or conditional write, a reversal's reservation). A
// remembered version is therefore the database's version with the same rows. A payment
// changed elsewhere (another process, a reservation under the row lock, a partner's notification) costs
// one statement that writes nothing; the operation then reads afresh. Only committed
// states are remembered: the row a statement returned, or, after statements that settled
// the last PENDING rows, the row with the sums of its ledger (payments.repo restingTotals).
import type { Ledger, OperationRow, PartnerTxRow } from './payments.repo.ts';

/** Nothing in the payment's ledger or operations is PENDING: nothing can settle without a new version. */
export function nothingPending(l: Ledger): boolean {
  return !l.txs.some((t) => t.status === 'PENDING') && !l.ops.some((o) => o.status === 'PENDING');
}

/** The default number of payments remembered (PAYD_RECENT_PAYMENTS); about 5 KB each (10 MB by default). */
export const RECENT_PAYMENTS_DEFAULT = 2048;

export class RecentPayments {
  private readonly entries = new Map<string, Ledger>();

  /** capacity 0 remembers nothing (every operation reads the payment). */
  constructor(private readonly capacity: number = RECENT_PAYMENTS_DEFAULT) {}

  /** The payment as this process last wrote it, if it is the entity's and still remembered. */
  recall(entityId: string, id: string): Ledger | undefined {
    const e = this.entries.get(id);
    return e && e.payment.entity_id === entityId ? e : undefined;
  }

  /**
   * Remembers a state just committed with nothing PENDING in it (the rows are frozen:
   * the views built from them must not change them). The oldest is forgotten first.
   */
  remember(l: Ledger): void {
    if (this.capacity <= 0) return;
    if (!nothingPending(l) || l.payment.processing) return;
    const id = l.payment.id;
    this.entries.delete(id);
    // (As read from the database: the key's request fingerprint, written with a row, is not.)
    this.entries.set(id, {
      payment: Object.freeze(withoutFingerprint(l.payment)),
      txs: Object.freeze(l.txs.map((t) => Object.freeze(t))) as PartnerTxRow[],
      ops: Object.freeze(l.ops.map((o) => Object.freeze(withoutFingerprint(o)))) as OperationRow[],
    });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  forget(id: string): void {
    this.entries.delete(id);
  }
}

/** A row without request_fingerprint (what PAYMENT_COLS and OP_COLS read). */
function withoutFingerprint<T extends { request_fingerprint?: string | null }>(row: T): T {
  if (!('request_fingerprint' in row)) return row;
  const { request_fingerprint: _, ...rest } = row;
  return rest as T;
}
