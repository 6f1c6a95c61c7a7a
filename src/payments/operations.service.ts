// Captures, refunds and voids. The amount check and the reservation happen in one
// transaction holding the payment row lock, so concurrent requests in any number of
// payd processes never take more than is available; partner calls happen outside any
// transaction, each with a partner key derived from the operation id.
import { randomUUID } from 'node:crypto';
import type { Db } from '../platform/db/index.ts';
import { problems } from '../platform/http/problem.ts';
import type { PartnerRegistry } from '../partners/port.ts';
import { allocate, availableFor } from './amounts.ts';
import { holdWhileInFlight } from './idempotency.ts';
import { callPartner, txUpdate } from './partner-calls.ts';
import { type OperationKind, paymentsRepo } from './payments.repo.ts';
import { reservedOf, slicesOf, stateOf } from './payment-view.ts';
import type { OperationBody } from './payments.schemas.ts';
import type { PaymentsConfig, PaymentsService, PaymentViewT } from './payments.service.ts';

const FIELD: Record<OperationKind, 'capture' | 'refund' | 'void'> = { CAPTURE: 'capture', REFUND: 'refund', VOID: 'void' };

export interface OperationResult {
  payment: PaymentViewT;
  operationId: string;
}

export class OperationsService {
  constructor(
    private readonly db: Db,
    private readonly partners: PartnerRegistry,
    private readonly payments: PaymentsService,
    private readonly config: PaymentsConfig,
  ) {}

  private async refuseReplay(paymentId: string, key: string, instance: string): Promise<void> {
    const first = await holdWhileInFlight(
      () => paymentsRepo.operationByKey(this.db, paymentId, key),
      (o) => o.status === 'PENDING',
      this.config,
    );
    if (first) throw problems.idempotencyViolation(instance, first.id);
  }

  async run(
    kind: OperationKind,
    entityId: string,
    paymentId: string,
    body: OperationBody,
    opts: { idempotencyKey?: string | undefined; instance: string; triggeredBy?: 'MERCHANT' | 'SYSTEM' },
  ): Promise<OperationResult> {
    // A replayed key is found under the row lock below and answered after the lock is
    // released (held while the first call is in flight), before any amount check.
    const opId = randomUUID();
    const field = FIELD[kind];
    const reservation = await this.db.transaction(async (tx) => {
      const p = await paymentsRepo.get(tx, entityId, paymentId, true);
      if (!p) throw problems.notFound(`Payment ${paymentId} does not exist.`);
      if (opts.idempotencyKey && (await paymentsRepo.operationByKey(tx, paymentId, opts.idempotencyKey))) return 'replay' as const;
      if (p.authorization_status !== 'AUTHORIZED') {
        throw problems.unprocessable('payment-not-authorized', 'Payment not authorized',
          `The payment is ${p.authorization_status}; only an AUTHORIZED payment can be ${kind === 'CAPTURE' ? 'captured' : kind === 'REFUND' ? 'refunded' : 'voided'}.`);
      }
      const txs = await paymentsRepo.txs(tx, paymentId);
      const { amounts } = stateOf(txs);
      const available = availableFor(field, amounts, reservedOf(txs));
      const amount = body.amount ?? available;
      if (amount <= 0 || amount > available) {
        throw problems.unprocessable('amount-not-available', 'Amount not available',
          `${amount} cannot be ${field === 'capture' ? 'captured' : field === 'refund' ? 'refunded' : 'voided'}: ${available} is available` +
          (available !== amounts[`available_to_${field}`] ? ' (other operations are in progress)' : '') + '.',
          { available_amount: available });
      }
      const op = await paymentsRepo.insertOperation(tx, {
        id: opId, payment_id: paymentId, kind, amount, status: 'PENDING', triggered_by: opts.triggeredBy ?? 'MERCHANT',
        merchant_reference: body.merchant_reference ?? null, reason: body.reason ?? null, idempotency_key: opts.idempotencyKey ?? null,
      });
      if (!op) return 'replay' as const;
      let seq = txs.reduce((max, t) => Math.max(max, t.seq), 0) + 1; // the ledger as read under the lock
      const byId = new Map(txs.map((t) => [t.id, t]));
      const children = allocate(field, amount, slicesOf(txs)).map((a, i) => {
        const auth = byId.get(a.id)!;
        return { id: randomUUID(), key: `${opId}:${i + 1}`, amount: a.amount, auth };
      });
      await paymentsRepo.insertTxs(tx, children.map((c) => ({
        id: c.id, payment_id: paymentId, operation_id: opId, parent_id: c.auth.id, kind, seq: seq++,
        partner: c.auth.partner, method: c.auth.method, amount: c.amount, status: 'PENDING', partner_key: c.key,
        card: c.auth.card, save_token: null,
      })));
      await paymentsRepo.touch(tx, paymentId);
      return { currency: p.currency, children };
    });
    if (reservation === 'replay') {
      await this.refuseReplay(paymentId, opts.idempotencyKey!, opts.instance);
      throw problems.conflict('Idempotency key already used.');
    }

    for (const c of reservation.children) {
      const connector = this.partners.get(c.auth.partner)!;
      const req = { key: c.key, authorization_reference: c.auth.partner_reference ?? '', amount: c.amount, currency: reservation.currency };
      const call = kind === 'CAPTURE' ? () => connector.capture(req) : kind === 'REFUND' ? () => connector.refund(req) : () => connector.void(req);
      const update = txUpdate(kind, await callPartner(call, this.config.partnerTimeoutMs));
      if (update) await paymentsRepo.settleTx(this.db, c.id, update);
    }
    const view = await this.payments.finalize(entityId, paymentId, { endProcessing: false, recover: false });
    return { payment: view ?? (await this.payments.getStored(entityId, paymentId)), operationId: opId };
  }
}
