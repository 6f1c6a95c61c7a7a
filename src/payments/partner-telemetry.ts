// What payd sees of its partners: every call counted by partner, call and outcome, its
// latency in a histogram, and every call that failed without an answer (an exception or
// no answer in time) written to the log with the partner key (`<payment or operation
// id>:<n>`: it names the payment) and the reason, so that an operator can tell a partner
// outage from a decline. Never the request itself: it may hold a card number. (No request
// id: carrying it to the call through AsyncLocalStorage cost every request of the process
// about a tenth of its CPU on Node 20, for a log line the partner key already ties to its
// payment.)
import { Counter, Histogram, type Registry } from 'prom-client';
import type { PartnerResult } from '../partners/port.ts';

interface Log {
  warn(obj: object, msg: string): void;
}

export type CallEnd = { result: PartnerResult } | { timeout: true } | { error: unknown };

export class PartnerTelemetry {
  /** Set once the server's logger exists (app.ts). */
  log: Log | undefined;
  private readonly calls?: Counter<'partner' | 'call' | 'outcome'>;
  private readonly latency?: Histogram<'partner' | 'call'>;
  private readonly operations?: Counter<'kind' | 'status'>;

  constructor(registry?: Registry) {
    if (!registry) return;
    this.calls = new Counter({
      name: 'payd_partner_calls_total',
      help: 'Partner calls by partner, call (authorize, capture, refund, void, sync) and outcome (SUCCESS, REFUSED, ERROR, PENDING, or timeout / exception when no answer came)',
      labelNames: ['partner', 'call', 'outcome'] as const,
      registers: [registry],
    });
    this.latency = new Histogram({
      name: 'payd_partner_call_duration_seconds',
      help: 'Partner call latency by partner and call, answered or not',
      labelNames: ['partner', 'call'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.operations = new Counter({
      name: 'payd_operations_total',
      help: 'Operations (CAPTURE, REFUND, VOID) that reached a final status (SUCCESS, FAILURE, CONFLICT), counted once each, after their commit',
      labelNames: ['kind', 'status'] as const,
      registers: [registry],
    });
  }

  /** An operation reached a final status (its transaction committed). */
  operationEnded(kind: string, status: string): void {
    if (status !== 'PENDING') this.operations?.inc({ kind, status });
  }

  /** Records the end of one call. */
  end(partner: string, call: string, key: string, startedAt: number, end: CallEnd): void {
    const seconds = (performance.now() - startedAt) / 1000;
    const quiet = 'error' in end && end.error instanceof NotSettled;
    const outcome = 'result' in end ? end.result.outcome : 'timeout' in end ? 'timeout' : quiet ? 'not_settled' : 'exception';
    this.calls?.inc({ partner, call, outcome });
    this.latency?.observe({ partner, call }, seconds);
    if (quiet || ('result' in end && end.result.outcome !== 'ERROR')) return;
    const base = { partner, call, partner_key: key, duration_ms: Math.round(seconds * 1000) };
    if ('result' in end) {
      this.log?.warn({ ...base, status_code: end.result.status_code, partner_status: end.result.partner_status }, 'partner answered with an error');
    } else if ('timeout' in end) {
      this.log?.warn(base, 'partner did not answer in time: outcome unknown, the transaction stays PENDING until a sync');
    } else {
      const err = end.error instanceof Error ? { type: end.error.name, message: end.error.message } : { message: String(end.error) };
      this.log?.warn({ ...base, err }, 'partner call failed: outcome unknown, the transaction stays PENDING until a sync');
    }
  }
}

/** A sync that settled nothing for a known reason (not received yet; the resend's own timeout, already logged): counted, not logged. */
export class NotSettled extends Error {
  override name = 'NotSettled';
}

/** Who is called, for callPartner's telemetry. */
export interface CallLabel {
  telemetry?: PartnerTelemetry | undefined;
  partner: string;
  call: string;
  key: string;
}
