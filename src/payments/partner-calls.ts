// Calling a partner: bounded in time, and translated into a ledger update. A call that
// throws or times out has an unknown outcome, so the transaction stays PENDING until
// a sync with the same partner key settles it.
import type { PartnerResult } from '../partners/port.ts';
import type { PartnerTxRow, TxKind, TxUpdate } from './payments.repo.ts';
import { type AuthorizationStatus, type OperationStatus, type TxStatus, unreachable } from './common.schemas.ts';
import type { CallEnd, CallLabel } from './partner-telemetry.ts';

const TIMED_OUT = Symbol('timed out');

/**
 * The partner's answer, or undefined when it did not come in time (or the call failed).
 * onLate receives an answer that arrives after the time was up: the call was in flight
 * at the partner, which may have acted on it. label: counted and, when it fails, logged
 * (partner-telemetry.ts).
 */
export async function callPartner(call: () => Promise<PartnerResult>, timeoutMs: number,
  onLate?: (result: PartnerResult) => void, label?: CallLabel): Promise<PartnerResult | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const startedAt = performance.now();
  const end = (e: CallEnd) => label?.telemetry?.end(label.partner, label.call, label.key, startedAt, e);
  try {
    const pending = call();
    const first = await Promise.race([
      pending,
      new Promise<typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(() => resolve(TIMED_OUT), timeoutMs);
      }),
    ]);
    if (first !== TIMED_OUT) {
      end({ result: first });
      return first;
    }
    end({ timeout: true });
    if (onLate) pending.then(onLate, () => {});
    else pending.catch(() => {});
    return undefined;
  } catch (error) {
    end({ error });
    return undefined;
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/** Ledger status of a transaction of this kind for the partner's outcome. */
export function txStatus(kind: TxKind, result: PartnerResult | undefined): TxStatus {
  if (!result) return 'PENDING';
  const outcome = result.outcome;
  switch (outcome) {
    case 'PENDING': return 'PENDING';
    case 'SUCCESS': return kind === 'AUTHORIZATION' ? 'AUTHORIZED' : 'SUCCESS';
    case 'REFUSED':
    case 'ERROR': return kind === 'AUTHORIZATION' ? outcome : 'FAILURE';
    default: return unreachable(outcome);
  }
}

export function txUpdate(kind: TxKind, result: PartnerResult | undefined): TxUpdate | undefined {
  if (!result) return undefined;
  return {
    status: txStatus(kind, result),
    partner_reference: result.partner_reference,
    partner_status: result.partner_status,
    partner_status_description: result.partner_status_description,
    status_code: result.status_code,
    card: result.card as Record<string, unknown> | undefined,
    redirection: result.outcome === 'PENDING' ? (result.redirection ?? null) : null,
    token_saved: result.token_saved,
  };
}

/** The status of an operation from the statuses of its partner transactions. */
export function operationStatus(statuses: TxStatus[]): OperationStatus {
  if (statuses.some((s) => s === 'PENDING')) return 'PENDING';
  if (statuses.every((s) => s === 'SUCCESS')) return 'SUCCESS';
  if (statuses.every((s) => s === 'FAILURE')) return 'FAILURE';
  return 'CONFLICT';
}

/**
 * A payment's authorization status from its authorization rows: PENDING while one is
 * (or while the payment is still being processed), AUTHORIZED when the rows authorized
 * the whole amount, else REFUSED when a partner refused, ERROR otherwise. PARTIAL is
 * what the caller makes of a part authorized (a reversal), not a status.
 */
export function authorizationStatus(auths: Array<Pick<PartnerTxRow, 'status' | 'amount'>>, amount: number, stillRunning = false): AuthorizationStatus {
  if (stillRunning || auths.some((t) => t.status === 'PENDING')) return 'PENDING';
  const authorized = auths.reduce((s, t) => s + (t.status === 'AUTHORIZED' ? t.amount : 0), 0);
  if (authorized === amount) return 'AUTHORIZED';
  return auths.some((t) => t.status === 'REFUSED') ? 'REFUSED' : 'ERROR';
}
