// Money math of a payment. Amounts are integers in the currency's minor unit. The
// totals come from partner transactions; what each operation may take is the table's
// (transitions.ts availableFor); the rest is derived here, in one place.
import { methodMeaning } from '../partners/methods.ts';
import type { AuthorizationStatus } from './common.schemas.ts';
import { availableFor } from './transitions.ts';

export interface Totals {
  authorize_pending: number;
  total_authorized: number;
  total_voided: number;
  total_captured: number;
  total_refunded: number;
}

export interface Amounts extends Totals {
  available_to_void: number;
  available_to_capture: number;
  available_to_refund: number;
}

export type Degree = 'NOT' | 'PARTIALLY' | 'FULLY';

export interface Overview {
  consumed: Degree;
  captured: Degree;
  voided: Degree;
  refunded: Degree;
}

/** Amounts reserved by operations still in flight (PENDING), per kind. */
export interface Reserved {
  capture: number;
  void: number;
  refund: number;
}

/**
 * The Payment's amounts: its totals, and for each operation what it would be accepted
 * for now, availableFor of the table (the function the operations' plan decides by): 0
 * when the state does not list the operation, else its balance less what operations in
 * flight reserve. (In the spec's order of fields.)
 */
export function deriveAmounts(t: Totals, status: AuthorizationStatus, reserved: Reserved): Amounts {
  return {
    authorize_pending: t.authorize_pending,
    total_authorized: t.total_authorized,
    total_voided: t.total_voided,
    available_to_void: availableFor('void', status, t, reserved),
    total_captured: t.total_captured,
    available_to_capture: availableFor('capture', status, t, reserved),
    total_refunded: t.total_refunded,
    available_to_refund: availableFor('refund', status, t, reserved),
  };
}

function degree(part: number, whole: number): Degree {
  if (part <= 0) return 'NOT';
  return part >= whole ? 'FULLY' : 'PARTIALLY';
}

export function deriveOverview(a: Amounts): Overview {
  return {
    consumed: a.total_authorized === 0 ? 'NOT' : degree(a.total_captured + a.total_voided, a.total_authorized),
    captured: degree(a.total_captured, a.total_authorized),
    voided: degree(a.total_voided, a.total_authorized),
    refunded: degree(a.total_refunded, a.total_captured),
  };
}

/** One authorization's share of the payment, for allocating operations across a split. */
export interface Slice {
  /** The authorization partner transaction id. */
  id: string;
  method: string;
  authorized: number;
  /** Settled captures only: a refund may draw only on these. */
  captured: number;
  /** Captures still PENDING: they hold the authorization, but nothing can be refunded from them yet. */
  capturing?: number;
  /** Voids and refunds, settled or PENDING (reserved). */
  voided: number;
  refunded: number;
}

export interface Allocation {
  id: string;
  amount: number;
}

/** Capture order: gift cards, then other methods (BNPL), cards last (the authorization order; partners/methods.ts). */
const captureRank = (method: string) => methodMeaning(method).rank;

function order(slices: Slice[], kind: keyof Reserved): Slice[] {
  // Refunds and voids go the other way: money back to the card first, then other methods
  // (a BNPL plan shrinks), gift cards last (store credit is what the shopper least wants
  // back). The sort is stable: parts of one rank keep their authorization order.
  const rank = (s: Slice) => (kind === 'capture' ? captureRank(s.method) : 2 - captureRank(s.method));
  return [...slices].sort((a, b) => rank(a) - rank(b));
}

/**
 * Splits an operation amount over the authorizations of a split payment: captures take
 * gift cards first, then other methods, cards last; refunds and voids take cards first,
 * then other methods, gift cards last. A refund draws only on settled
 * captures (a PENDING capture may yet fail, and its partner has nothing to refund).
 * Throws when the slices cannot cover the amount, which the caller has already ruled
 * out under the row lock.
 */
export function allocate(kind: keyof Reserved, amount: number, slices: Slice[]): Allocation[] {
  const room = (s: Slice) =>
    kind === 'refund' ? Math.max(0, s.captured - s.refunded) : Math.max(0, s.authorized - s.captured - (s.capturing ?? 0) - s.voided);
  let left = amount;
  const out: Allocation[] = [];
  for (const s of order(slices, kind)) {
    if (left === 0) break;
    const take = Math.min(left, room(s));
    if (take > 0) {
      out.push({ id: s.id, amount: take });
      left -= take;
    }
  }
  if (left !== 0) throw new RangeError(`cannot allocate ${amount} for ${kind}: ${left} left over`);
  return out;
}
