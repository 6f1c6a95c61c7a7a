// What a payment's rows say it is now: its authorization status, each operation's
// status, the events of what changed, and what must follow (the reversal of a split not
// fully authorized, the automatic capture, the release of what a partner that captures
// an authorization once let go with a partial capture). The one place this is decided from rows:
// every conclusion asks it, whether it is written in one statement (the creation or the
// operation that nobody touched meanwhile: money.repo.ts, conclude's shapes) or under the
// payment's row lock (PaymentsService.finalize: what settlement, recovery, late answers,
// notifications and reversals end with). Pure: no SQL, no partner.
import type { AuthorizationStatus, OperationStatus } from './common.schemas.ts';
import { authorizationStatus, operationStatus } from './partner-calls.ts';
import { ledgerTotals } from './ledger-totals.ts';
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
  /** The release now due (written with the conclusion, under the row lock), undefined when none. */
  release: Release | undefined;
}

/**
 * What a partner that captures an authorization once (PartnerConnector.capturesOnce)
 * released with a successful capture of part of it: the rest of each such authorization,
 * recorded by payd as a SYSTEM void that has succeeded (no partner call: the capture's
 * success is the partner's release), keyed `release:<capture operation id>`.
 */
export interface Release {
  key: string;
  reason: string;
  parts: Array<{ auth: PartnerTxRow; amount: number }>;
}

const RELEASE_REASON = 'Released by the partner with a partial capture (it captures an authorization once)';

/** The payment fields an outcome reads. */
export type OutcomePayment = Pick<PaymentRow, 'amount' | 'authorization_status' | 'processing' | 'capture_mode'>;

/**
 * The outcome of the payment `p` (as stored before the change) whose rows are now `txs`
 * and `ops`. endProcessing: the creating request (or recovery on its behalf) is over, so
 * a payment still marked processing is decided from its rows alone.
 */
export function outcomeOf(p: OutcomePayment, txs: readonly PartnerTxRow[], ops: readonly OperationRow[],
  opts: { endProcessing: boolean; capturesOnce: (partner: string) => boolean }): Outcome {
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
  const release = status === 'AUTHORIZED' ? releaseOf(auths, txs, ops, opts.capturesOnce) : undefined;
  return { status, changed, operations, events, reverse, capture, release };
}

/**
 * The release due on an AUTHORIZED payment: each authorization of a partner that
 * captures once, with a successful capture, nothing of it in flight (a capture or void
 * still PENDING on it decides first: its conclusion asks again), and a rest neither
 * captured nor voided (the running-totals rule, ledgerTotals). The key names the last
 * successful capture among them; a key the payment already used (two such authorizations
 * released at different times by one capture) is made unique with the operation count.
 */
function releaseOf(auths: readonly PartnerTxRow[], txs: readonly PartnerTxRow[], ops: readonly OperationRow[],
  capturesOnce: (partner: string) => boolean): Release | undefined {
  const once = auths.filter((a) => a.status === 'AUTHORIZED' && capturesOnce(a.partner));
  if (once.length === 0) return undefined;
  const parts: Release['parts'] = [];
  let capture: PartnerTxRow | undefined;
  for (const a of once) {
    const children = txs.filter((t) => t.parent_id === a.id);
    const s = ledgerTotals([a, ...children]);
    if (s.total_captured === 0 || s.reserved_capture > 0 || s.reserved_void > 0) continue;
    const rest = s.total_authorized - s.total_captured - s.total_voided;
    if (rest <= 0) continue;
    parts.push({ auth: a, amount: rest });
    for (const c of children) if (c.kind === 'CAPTURE' && c.status === 'SUCCESS' && (!capture || c.seq > capture.seq)) capture = c;
  }
  if (parts.length === 0) return undefined;
  const key = `release:${capture!.operation_id}`;
  return { key: ops.some((o) => o.idempotency_key === key) ? `${key}:${ops.length}` : key, reason: RELEASE_REASON, parts };
}

/** Whether the outcome is complete as written: nothing to reverse, no automatic capture to make, nothing to release. */
export function needsNothingElse(o: Outcome): boolean {
  return o.reverse.length === 0 && o.capture === 0 && o.release === undefined;
}
