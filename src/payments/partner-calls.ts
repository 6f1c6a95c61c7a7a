// Calling a partner: bounded in time, and translated into a ledger update. A call that
// throws or times out has an unknown outcome, so the transaction stays PENDING until
// a sync with the same partner key settles it.
import type { PartnerResult } from '../partners/port.ts';
import type { TxKind, TxUpdate } from './payments.repo.ts';
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
export function txStatus(kind: TxKind, result: PartnerResult | undefined): string {
  if (!result || result.outcome === 'PENDING') return 'PENDING';
  if (kind === 'AUTHORIZATION') return result.outcome === 'SUCCESS' ? 'AUTHORIZED' : result.outcome;
  return result.outcome === 'SUCCESS' ? 'SUCCESS' : 'FAILURE';
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
export function operationStatus(statuses: string[]): string {
  if (statuses.some((s) => s === 'PENDING')) return 'PENDING';
  if (statuses.every((s) => s === 'SUCCESS')) return 'SUCCESS';
  if (statuses.every((s) => s === 'FAILURE')) return 'FAILURE';
  return 'CONFLICT';
}
