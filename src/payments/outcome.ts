// What a payment's rows say it is now: its authorization status, each operation's
// status, the events of what changed, and what must follow (the reversal of a split not
// fully authorized, the automatic capture). The one place this is decided from rows:
// every conclusion asks it, whether it is written in one statement (the creation or the
// operation that nobody touched meanwhile: money.repo.ts, conclude's shapes) or under the
// payment's row lock (PaymentsService.finalize: what settlement, recovery, late answers,
// notifications and reversals end with). Pure: no SQL, no partner.
import type { AuthorizationStatus, OperationStatus } from './common.schemas.ts';
import { authorizationStatus, operationStatus } from './partner-calls.ts';
import { type PaymentEventSpec, authorizationEventType, operationEventType } from './payment-events.ts';
import { childrenByOperation } from './payment-view.ts';
import type { OperationRow, PartnerTxRow, PaymentRow } from './payments.repo.ts';

export interface Outcome {
  /** The authorization status the rows give. */
  status: AuthorizationStatus;
  /** Whether the payment row itself changes: its status, or the end of its processing. */
  changed: boolean;
  /** The operations whose status moves, each with its new status (in the order of `ops`). */
  operations: Array<{ op: OperationRow; status: OperationStatus }>;
  /** The events of these changes: the authorization's first, then each operation's. */
  events: PaymentEventSpec[];
  /** Authorized parts of a payment that failed as a whole, not reversed yet: to reverse. */
  reverse: PartnerTxRow[];
  /** The automatic capture now due (the amount), 0 when none. */
  capture: number;
}

/** The payment fields an outcome reads. */
export type OutcomePayment = Pick<PaymentRow, 'amount' | 'authorization_status' | 'processing' | 'capture_mode'>;

/**
 * The outcome of the payment `p` (as stored before the change) whose rows are now `txs`
 * and `ops`. endProcessing: the creating request (or recovery on its behalf) is over, so
 * a payment still marked processing is decided from its rows alone.
 */
export function outcomeOf(p: OutcomePayment, txs: readonly PartnerTxRow[], ops: readonly OperationRow[], opts: { endProcessing: boolean }): Outcome {
  const auths = txs.filter((t) => t.kind === 'AUTHORIZATION');
  const status = authorizationStatus(auths, p.amount, p.processing && !opts.endProcessing);
  const changed = status !== p.authorization_status || (opts.endProcessing && p.processing);
  const events: PaymentEventSpec[] = [];
  const authEvent = status !== p.authorization_status ? authorizationEventType(status) : undefined;
  if (authEvent) events.push({ type: authEvent });

  let reverse: PartnerTxRow[] = [];
  if (status === 'REFUSED' || status === 'ERROR') {
    const reversed = new Set(txs.filter((t) => t.kind === 'VOID').map((t) => t.parent_id));
    reverse = auths.filter((t) => t.status === 'AUTHORIZED' && !reversed.has(t.id));
  }

  const operations: Outcome['operations'] = [];
  const childrenOf = childrenByOperation(txs as PartnerTxRow[]); // (one pass: an operation's children, not the whole ledger per operation)
  for (const o of ops) {
    const children = childrenOf.get(o.id);
    const next = children?.length ? operationStatus(children.map((t) => t.status)) : o.status;
    if (next === o.status) continue;
    operations.push({ op: o, status: next });
    const type = operationEventType({ kind: o.kind, status: next });
    if (type) events.push({ type, operationId: o.id });
  }

  const capture = status === 'AUTHORIZED' && p.authorization_status !== 'AUTHORIZED' && p.capture_mode === 'AUTOMATIC'
    && !ops.some((o) => o.kind === 'CAPTURE') ? p.amount : 0;
  return { status, changed, operations, events, reverse, capture };
}

/** Whether the outcome is complete as written: nothing to reverse and no automatic capture to make. */
export function needsNothingElse(o: Outcome): boolean {
  return o.reverse.length === 0 && o.capture === 0;
}
