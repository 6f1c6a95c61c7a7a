// What happens after an authorization, in one place: the services that make payments
// and operations are built here, and the steps that join them are methods of this
// orchestrator handed to the services at construction (no callbacks assigned later).
// - AUTOMATIC capture: once a payment is AUTHORIZED (inline, on the partner's
//   notification, or by recovery), its capture, once whoever notices first.
// - A payment link paid twice: the second authorized payment is given back (void, or
//   refund once captured), once.
import type { Db } from '../platform/db/index.ts';
import { isProblem, PROBLEM_BASE, PROBLEM_TYPE } from '../platform/http/problem.ts';
import type { PartnerRegistry } from '../partners/port.ts';
import { OperationsService } from './operations.service.ts';
import { type PaymentsConfig, PaymentsService } from './payments.service.ts';

/**
 * Answers of a system operation that mean it is done or no longer applies: its key was
 * used already (another process got there first), or there is nothing left to do.
 */
const SETTLED_ELSEWHERE = [
  PROBLEM_TYPE.writeConflict, PROBLEM_TYPE.conflict, `${PROBLEM_BASE}amount-not-available`,
  `${PROBLEM_BASE}payment-not-authorized`, `${PROBLEM_BASE}operation-limit-reached`,
];

export class AfterAuthorization {
  readonly payments: PaymentsService;
  readonly operations: OperationsService;

  constructor(db: Db, partners: PartnerRegistry, config: PaymentsConfig) {
    this.payments = new PaymentsService(db, partners, config, { authorized: (entityId, paymentId, capture) => this.captureAutomatically(entityId, paymentId, capture) });
    this.operations = new OperationsService(db, partners, this.payments, config);
  }

  /** The capture of an AUTOMATIC payment: one per payment, whoever notices the authorization first. */
  async captureAutomatically(entityId: string, paymentId: string, amount: number): Promise<void> {
    await this.operations.run('CAPTURE', entityId, paymentId, { amount }, {
      idempotencyKey: `auto-capture:${paymentId}`, instance: `/v2/payments/${paymentId}/captures`, triggeredBy: 'SYSTEM',
    }).catch(ignoreSettled);
  }

  /** A second authorized payment of a payment link already paid: given back, once. */
  async reverseDuplicate(entityId: string, paymentId: string): Promise<void> {
    const p = await this.payments.getStored(entityId, paymentId);
    const kind = p.amounts.available_to_void > 0 ? 'VOID' : p.amounts.available_to_refund > 0 ? 'REFUND' : undefined;
    if (!kind) return;
    await this.operations.run(kind, entityId, paymentId, { reason: 'The payment link was already paid by another payment' }, {
      idempotencyKey: `link-duplicate:${paymentId}`, instance: `/v2/payments/${paymentId}/${kind === 'VOID' ? 'voids' : 'refunds'}`, triggeredBy: 'SYSTEM',
    }).catch(ignoreSettled);
  }
}

function ignoreSettled(err: unknown): void {
  if (!isProblem(err, ...SETTLED_ELSEWHERE)) throw err;
}
