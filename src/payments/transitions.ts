// The states of a payment and the operations each allows, as data (after Kill Bill's
// PaymentStates.xml: states, operations, and which operation leaves which state). One
// table, read by everything that decides or shows what can be done to a payment:
// * the operations' plan (operations.service.ts), which refuses what the table does not
//   allow, with the problem the table names;
// * the Payment's amounts available_to_capture, _refund and _void (amounts.ts
//   deriveAmounts): each is availableFor of its operation, the function plan decides by,
//   so an operation of that amount is accepted and one of more is refused;
// * the dashboard's action forms (dashboard/payment-actions.ts), offered when that amount
//   is more than zero;
// * the OpenAPI descriptions of POST .../captures, .../refunds, .../voids
//   (payments.routes.ts, operationDescription);
// * test/payments/transitions.test.ts, which walks the table against the API.
// Not the Payment's links: the spec's resource table lists self, capture, refund and
// void, and they are shown always (payment-view.ts).
//
// A payment's state for operations is its authorization status; an AUTHORIZED payment
// holds two balances, and each operation draws on one:
//
//   PENDING ─┬─▶ REFUSED, ERROR              no operation
//            └─▶ AUTHORIZED ── uncaptured (authorized − captured − voided) > 0 ──▶ capture, void
//                           └─ captured, not refunded (captured − refunded) > 0  ──▶ refund
//
// An operation is allowed when the table lists it from the payment's status and its
// balance, less what operations in flight reserve of it, is more than zero.
import type { Reserved, Totals } from './amounts.ts';
import type { AuthorizationStatus } from './common.schemas.ts';

export type OperationName = 'capture' | 'refund' | 'void';
export type Balance = 'uncaptured' | 'captured';

/** The operations: their ledger kind, path, words, and the balance each draws on. */
export const OPERATIONS = {
  capture: { kind: 'CAPTURE', path: 'captures', verb: 'Capture', past: 'captured', balance: 'uncaptured' },
  refund: { kind: 'REFUND', path: 'refunds', verb: 'Refund', past: 'refunded', balance: 'captured' },
  void: { kind: 'VOID', path: 'voids', verb: 'Void', past: 'voided', balance: 'uncaptured' },
} as const satisfies Record<OperationName, { kind: string; path: string; verb: string; past: string; balance: Balance }>;

export const OPERATION_NAMES = Object.keys(OPERATIONS) as OperationName[];

export type OperationKindOf<N extends OperationName> = (typeof OPERATIONS)[N]['kind'];

/** The operation of a ledger / operation kind. */
export function operationOf(kind: 'CAPTURE' | 'REFUND' | 'VOID'): OperationName {
  return kind === 'CAPTURE' ? 'capture' : kind === 'REFUND' ? 'refund' : 'void';
}

/** The balances of an AUTHORIZED payment: how each follows from its totals, and which operations in flight reserve part of it. */
export const BALANCES = {
  uncaptured: {
    of: (t: Totals) => t.total_authorized - t.total_captured - t.total_voided, formula: 'total_authorized − total_captured − total_voided',
    reservedBy: ['capture', 'void'], description: 'authorized, neither captured nor voided',
  },
  captured: {
    of: (t: Totals) => t.total_captured - t.total_refunded, formula: 'total_captured − total_refunded',
    reservedBy: ['refund'], description: 'captured, not refunded',
  },
} as const satisfies Record<Balance, { of: (t: Totals) => number; formula: string; reservedBy: readonly OperationName[]; description: string }>;

/** Each state (authorization status), what it means, and the operations it allows (each on its balance). */
export const STATES = {
  PENDING: { description: 'the authorization is in progress (a challenge, a partner answer awaited)', operations: [] },
  AUTHORIZED: { description: 'the amount is held', operations: ['capture', 'void', 'refund'] },
  REFUSED: { description: 'a partner refused the authorization', operations: [] },
  ERROR: { description: 'the authorization failed', operations: [] },
} as const satisfies Record<AuthorizationStatus, { description: string; operations: readonly OperationName[] }>;

/** The problem of an operation the table refuses, by why. */
export const REFUSALS = {
  /** The state does not list the operation. */
  state: { type: 'payment-not-authorized', title: 'Payment not authorized' },
  /** The state lists it, but its balance (less what is reserved) is zero, or the amount asked is more. */
  balance: { type: 'amount-not-available', title: 'Amount not available' },
} as const;

/** Whether the state lists the operation. */
export function allowedIn(status: AuthorizationStatus, op: OperationName): boolean {
  return (STATES[status].operations as readonly OperationName[]).includes(op);
}

/** The balance the operation draws on, before what operations in flight reserve of it. */
export function balanceFor(op: OperationName, t: Totals): number {
  return Math.max(0, BALANCES[OPERATIONS[op].balance].of(t));
}

/**
 * What the operation may take now: its balance less what operations in flight reserve of
 * it, and 0 when the state does not list it. The one rule of what is available: plan
 * decides by it, and the Payment's available_to_<op> is it (amounts.ts deriveAmounts).
 */
export function availableFor(op: OperationName, status: AuthorizationStatus, t: Totals, reserved: Reserved): number {
  if (!allowedIn(status, op)) return 0;
  return Math.max(0, balanceFor(op, t) - BALANCES[OPERATIONS[op].balance].reservedBy.reduce((s, r) => s + reserved[r], 0));
}

/** The operations the payment accepts now, each with what it may take. */
export function allowedOperations(status: AuthorizationStatus, t: Totals, reserved: Reserved): Array<{ op: OperationName; available: number }> {
  return OPERATION_NAMES.map((op) => ({ op, available: availableFor(op, status, t, reserved) })).filter((x) => x.available > 0);
}

/** The sentence the OpenAPI description of an operation gives of when it is accepted (from the table). */
export function operationDescription(op: OperationName): string {
  const o = OPERATIONS[op];
  const from = (Object.keys(STATES) as AuthorizationStatus[]).filter((s) => allowedIn(s, op));
  const b = BALANCES[o.balance];
  const others = (Object.keys(STATES) as AuthorizationStatus[]).filter((s) => !allowedIn(s, op));
  return `Accepted on a payment whose authorization.status is ${from.join(' or ')}, up to what is ${b.description} ` +
    `(${b.formula}) less what ${b.reservedBy.map((r) => `${OPERATIONS[r].kind.toLowerCase()}s`).join(' and ')} in progress reserve: ` +
    `amounts.available_to_${op}, which is 0 in any other state. On a payment ${others.join(', ')}: a 400 problem of type urn:eu.service:${REFUSALS.state.type}; ` +
    `for more than is available (or nothing available): a 400 problem of type urn:eu.service:${REFUSALS.balance.type} with available_amount.`;
}
