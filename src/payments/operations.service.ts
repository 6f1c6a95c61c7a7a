// Captures, refunds and voids. The amount check and the reservation happen in one
// transaction holding the payment row lock, so concurrent requests in any number of
// payd processes never take more than is available; partner calls happen outside any
// transaction, each with a partner key derived from the operation id.
import { randomUUID } from 'node:crypto';
import type { Db } from '../platform/db/index.ts';
import { faultPoint } from '../platform/fault-points.ts';
import type { FirstRequest } from '../platform/http/idempotency.ts';
import { Problem, problems } from '../platform/http/problem.ts';
import type { PartnerRegistry } from '../partners/port.ts';
import { type Slice, allocate } from './amounts.ts';
import { OPERATIONS, REFUSALS, STATES, allowedIn, availableFor, balanceFor, operationOf } from './transitions.ts';
import { holdWhileInFlight } from './idempotency.ts';
import { answerInline } from '../partners/inline.ts';
import { callPartner, txUpdate } from './partner-calls.ts';
import { type NewOperation, type NewPartnerTx, type OperationKind, type OperationRow, type PartnerTxRow, type PaymentRow, type TxUpdate, newTxRow, nextSeqOf, paymentsRepo, pendingChildren, settledTxRow } from './payments.repo.ts';
import { isOperationKeyConflict, moneyWriter, restingTotals } from './money.repo.ts';
import type { CountedRow } from './ledger-totals.ts';
import { needsNothingElse, outcomeOf } from './outcome.ts';
import { paymentView, reservedOfPayment, slicesOfPayment, totalsOfPayment } from './payment-view.ts';
import { paymentEvents } from './payment-events.ts';
import type { OperationBody } from './payments.schemas.ts';
import { type Ledger, nothingPending } from './recent-payments.ts';
import type { PaymentsConfig, PaymentsService, PaymentViewT } from './payments.service.ts';

export interface OperationOptions {
  idempotencyKey?: string | undefined;
  /** The keyed request's fingerprint (requestFingerprint), stored on the operation with its key. */
  fingerprint?: string | undefined;
  instance: string;
  triggeredBy?: 'MERCHANT' | 'SYSTEM';
}

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

  /** Whether the partner captures an authorization once (PartnerConnector.capturesOnce): what outcome.ts releases. */
  private readonly capturesOnce = (partner: string): boolean => this.partners.capturesOnce(partner);

  private async refuseReplay(paymentId: string, key: string, instance: string): Promise<void> {
    const first = await holdWhileInFlight(
      () => paymentsRepo.operationByKey(this.db, paymentId, key),
      (o) => o.status === 'PENDING',
      this.config,
    );
    if (first) throw problems.idempotencyViolation(instance, first.id);
  }

  /** The 409 for a key used first by another operation on this payment, once that one has ended (or the hold is over). */
  private async replayed(paymentId: string, key: string, instance: string): Promise<never> {
    await this.refuseReplay(paymentId, key, instance);
    throw problems.conflict('Idempotency key already used.');
  }

  /**
   * What this key already made on the entity's payment: the payment itself (the key that
   * created it), or an operation (held while that one is in flight); undefined when none.
   */
  async firstWithKey(entityId: string, paymentId: string, key: string): Promise<FirstRequest | undefined> {
    const p = await paymentsRepo.get(this.db, entityId, paymentId);
    if (!p) return undefined;
    if (p.idempotency_key === key) return { id: p.id, fingerprint: (await paymentsRepo.getByKey(this.db, entityId, key))?.request_fingerprint ?? null };
    const first = await holdWhileInFlight(() => paymentsRepo.operationByKey(this.db, paymentId, key), (o) => o.status === 'PENDING', this.config);
    return first && { id: first.id, fingerprint: first.request_fingerprint ?? null };
  }

  /**
   * The outcome (outcome.ts) of a payment whose only change is `op` and its rows, for the
   * one-statement shapes: `op`'s new status and its event, or undefined when the rows say
   * more changes (the payment's own status, another operation, a release), which only the
   * conclusion under the row lock writes.
   */
  private outcomeOfOne(p: PaymentRow, txs: PartnerTxRow[], ops: OperationRow[], op: OperationRow) {
    const outcome = outcomeOf(p, txs, ops, { endProcessing: false, capturesOnce: this.capturesOnce });
    const mine = outcome.operations.find((o) => o.op === op);
    if (outcome.changed || !needsNothingElse(outcome) || outcome.operations.length !== (mine ? 1 : 0)) return undefined;
    return { status: mine?.status ?? op.status, events: outcome.events };
  }

  /**
   * The amount of the operation and how it draws on the authorizations; a 400 problem when
   * the payment is not AUTHORIZED, has reached the operation limit, or has not the amount.
   * Decided from the payment row's running totals (and, for a split, its slices), never
   * from every earlier operation.
   */
  private plan(kind: OperationKind, p: PaymentRow, slices: Slice[], body: OperationBody): { amount: number; allocations: Array<{ id: string; amount: number }> } {
    const op = operationOf(kind);
    const { past } = OPERATIONS[op];
    if (!allowedIn(p.authorization_status, op)) {
      const from = (Object.keys(STATES) as Array<keyof typeof STATES>).filter((st) => allowedIn(st, op));
      throw problems.refused(REFUSALS.state.type, REFUSALS.state.title,
        `The payment is ${p.authorization_status}; only an ${from.join(' or ')} payment can be ${past}.`);
    }
    const limit = this.config.maxOperationsPerPayment;
    if (p.operation_count >= limit) {
      throw problems.refused('operation-limit-reached', 'Operation limit reached',
        `The payment already has ${p.operation_count} operations (captures, refunds and voids together); a payment takes at most ${limit}.`,
        { max_operations: limit });
    }
    // (What the Payment shows as available_to_<op>: one function, transitions.ts.)
    const totals = totalsOfPayment(p);
    const available = availableFor(op, p.authorization_status, totals, reservedOfPayment(p));
    const amount = body.amount ?? available;
    if (amount <= 0 || amount > available) {
      throw problems.refused(REFUSALS.balance.type, REFUSALS.balance.title,
        `${amount} cannot be ${past}: ${available} is available` +
        (available !== balanceFor(op, totals) ? ' (other operations are in progress)' : '') + '.',
        { available_amount: available });
    }
    const on = body.authorizations ? slices.filter((s) => body.authorizations!.includes(s.id)) : slices;
    return { amount, allocations: allocate(op, amount, on) };
  }

  /** The plan with each allocation's authorization row. */
  private async planWith(kind: OperationKind, p: PaymentRow, auths: PartnerTxRow[], ledger: () => PartnerTxRow[] | Promise<PartnerTxRow[]>,
    body: OperationBody): Promise<{ amount: number; allocations: Array<{ auth: PartnerTxRow; amount: number }> }> {
    // (Slices only matter for an AUTHORIZED payment: plan refuses any other first.)
    const slices = p.authorization_status === 'AUTHORIZED' ? await slicesOfPayment(p, auths, ledger) : [];
    const { amount, allocations } = this.plan(kind, p, slices, body);
    const byId = new Map(auths.map((t) => [t.id, t]));
    return { amount, allocations: allocations.map((a) => ({ auth: byId.get(a.id)!, amount: a.amount })) };
  }

  /**
   * The optimistic strategy: read the payment and its ledger (or recall it, when this
   * process wrote it last: recent-payments.ts), decide on that reading, and write only if
   * the version read is still the current one (every reservation moves the version, so
   * the amount check made on it still holds). When every partner involved answers
   * inline, the whole outcome is that one write; otherwise the write is the reservation,
   * then the partners are called and the operation concluded (optimisticReservation).
   * undefined: the locked strategy (a key already used, or the payment changed meanwhile).
   */
  private async optimistic(kind: OperationKind, entityId: string, paymentId: string, body: OperationBody,
    opts: OperationOptions, opId: string): Promise<OperationResult | undefined> {
    const recalled = this.config.recent?.recall(entityId, paymentId);
    if (recalled) {
      const done = await this.optimisticOn(recalled, true, kind, body, opts, opId);
      if (done !== 'stale') return done;
      this.config.recent!.forget(paymentId); // changed since this process wrote it: decided again on what is stored
    }
    const found = await paymentsRepo.getWithLedger(this.db, entityId, paymentId);
    if (!found) throw problems.notFound(`Payment ${paymentId} does not exist.`);
    const done = await this.optimisticOn(found, false, kind, body, opts, opId);
    return done === 'stale' ? undefined : done;
  }

  /**
   * The optimistic strategy on one reading of the payment. 'stale': the payment moved on since that
   * reading (the write applied nothing), or, for a recalled reading, the operation was
   * refused on it (a refusal is only given on what is stored: a capture made elsewhere
   * since may have made a refund possible).
   */
  private async optimisticOn(found: Ledger, recalled: boolean, kind: OperationKind, body: OperationBody,
    opts: OperationOptions, opId: string): Promise<OperationResult | undefined | 'stale'> {
    const { payment: p, txs, ops } = found;
    const paymentId = p.id;
    // The key that created the payment counts as processed on it (Errors 5).
    if (opts.idempotencyKey && p.idempotency_key === opts.idempotencyKey) throw problems.idempotencyViolation(opts.instance, p.id, false);
    if (opts.idempotencyKey && ops.some((o) => o.idempotency_key === opts.idempotencyKey)) return undefined;
    // (The whole ledger is read for the answer, a Payment with every operation; the
    // decision takes only the payment row's totals and its authorizations.)
    const auths = txs.filter((t) => t.kind === 'AUTHORIZATION');
    let planned: Awaited<ReturnType<OperationsService['planWith']>>;
    try {
      planned = await this.planWith(kind, p, auths, () => txs, body);
    } catch (err) {
      if (recalled && err instanceof Problem) return 'stale';
      throw err;
    }
    const { amount, allocations } = planned;
    const pending = pendingChildren(kind, paymentId, opId, nextSeqOf(txs), allocations);
    const startedAt = performance.now();
    const answers = allocations.map((a, i) => answerInline(this.partners.get(a.auth.partner), {
      kind, request: { key: pending[i]!.partner_key, entityId: p.entity_id, authorization_reference: a.auth.partner_reference ?? '', amount: a.amount, currency: p.currency },
    }));
    const newOp: NewOperation = {
      id: opId, payment_id: paymentId, kind, amount, status: 'PENDING',
      triggered_by: opts.triggeredBy ?? 'MERCHANT', merchant_reference: body.merchant_reference ?? null, reason: body.reason ?? null,
      idempotency_key: opts.idempotencyKey ?? null, request_fingerprint: opts.fingerprint ?? null,
    };
    if (answers.some((r) => !r || r.outcome === 'PENDING')) return this.optimisticReservation(found, newOp, pending, allocations.map((a) => a.auth));
    // The answer is built from this reading: it must hold nothing PENDING, which could
    // settle meanwhile without a new version (another operation's answer). Else locked.
    if (!nothingPending(found)) return undefined;

    const now = new Date();
    const op: OperationRow = { ...newOp, created_at: now, updated_at: now };
    const children = pending.map((c, i) => settledTxRow(newTxRow(c, now, now), txUpdate(kind, answers[i])!, now));
    const outcome = this.outcomeOfOne(p, [...txs, ...children], [...ops, op], op);
    if (!outcome) return undefined;
    op.status = outcome.status;
    const next = { ...p, version: p.version + 1, updated_at: now };
    const view = paymentView(next, [...txs, ...children], [...ops, op], this.config.baseUrl);
    try {
      const event = (await paymentEvents(this.db, p, view, outcome.events))[0];
      const written = await this.db.onRow(paymentId, () => moneyWriter.reserve(this.db, { shape: 'operation, concluded', payment: p, at: now, op, txs: children, parents: auths, event }));
      if (!written) return 'stale';
      this.config.recent?.remember({ payment: written, txs: [...txs, ...children], ops: [...ops, op] });
    } catch (err) {
      if (!isOperationKeyConflict(err)) throw err;
      return this.replayed(paymentId, opts.idempotencyKey!, opts.instance);
    }
    // (Counted once written: a reading that turned out stale is decided again.)
    answers.forEach((result, i) => this.config.telemetry?.end(allocations[i]!.auth.partner, kind.toLowerCase(), pending[i]!.partner_key, startedAt, { result: result! }));
    this.config.telemetry?.operationEnded(op.kind, op.status);
    return { payment: view, operationId: opId };
  }

  /**
   * The optimistic reservation, for partners to call: the operation and its PENDING rows
   * written in one statement only if the payment is still at the version read; then the
   * partner calls, outside any transaction; then, for an operation with one partner
   * transaction, its settlement, the operation's status, the payment's next version and
   * the event in one statement, provided nobody changed the payment meanwhile. Anything
   * else (several transactions, an answer still PENDING, a payment changed meanwhile)
   * ends as the locked strategy does: each answer recorded, then finalize.
   */
  private async optimisticReservation(found: Ledger, newOp: NewOperation, pending: NewPartnerTx[], auths: PartnerTxRow[]): Promise<OperationResult | 'stale'> {
    const { payment: p, txs, ops } = found;
    const at = await this.db.onRow(p.id, () => moneyWriter.reserve(this.db, { shape: 'operation', op: newOp, rows: pending, parents: auths, expectedVersion: p.version }));
    if (!at) return 'stale';
    this.config.recent?.forget(p.id);
    const rows = pending.map((c) => newTxRow(c, at, at));
    const op: OperationRow = { ...newOp, created_at: at, updated_at: at };
    // The one-statement end builds its answer from this reading: only when nothing in it
    // was PENDING (a row of another operation could settle meanwhile without a new version).
    const oneStatement = rows.length === 1 && nothingPending(found) ? { version: p.version + 1, txs, ops, op, row: rows[0]! } : undefined;
    const children = rows.map((r, i) => ({ id: r.id, key: r.partner_key, amount: r.amount, auth: auths[i]! }));
    return this.callAndSettle(op.kind, op.id, p, children, oneStatement);
  }

  /**
   * The one-statement end of an operation reserved optimistically with one partner
   * transaction (moneyWriter.conclude, shape 'operation'); undefined when it did not apply (the transaction
   * was settled elsewhere first, or the payment changed since the reservation).
   */
  private async conclude(p: PaymentRow, r: { version: number; txs: PartnerTxRow[]; ops: OperationRow[]; op: OperationRow; row: PartnerTxRow },
    update: TxUpdate): Promise<PaymentViewT | undefined> {
    if (update.status === 'PENDING') return undefined;
    const at = new Date();
    const child = settledTxRow(r.row, update, at);
    const op = { ...r.op, updated_at: at };
    const txs = [...r.txs, child];
    const ops = [...r.ops, op];
    const outcome = this.outcomeOfOne(p, txs, ops, op);
    if (!outcome) return undefined;
    op.status = outcome.status;
    const next = { ...p, version: r.version + 1, updated_at: at };
    const view = paymentView(next, txs, ops, this.config.baseUrl);
    const event = (await paymentEvents(this.db, p, view, outcome.events))[0];
    const done = await this.db.onRow(p.id, () => moneyWriter.conclude(this.db, {
      shape: 'operation', tx: r.row, parents: r.txs, update, paymentId: p.id, expectedVersion: r.version, operationId: op.id, status: op.status, at, event,
    }));
    if (!done.concluded) return undefined;
    // (Nothing PENDING was in the reading it was reserved on, or it is not remembered.)
    this.config.recent?.remember({ payment: { ...next, ...restingTotals(txs, ops) }, txs, ops });
    this.config.telemetry?.operationEnded(op.kind, op.status);
    return view;
  }

  /**
   * One operation: validate (the route's schema and plan), reserve, call partners, settle.
   * Two reservation strategies: optimistic when every partner involved answers inline
   * (the whole outcome written in one conditional statement), else locked (the row lock,
   * PENDING rows, the partner calls outside any transaction, then the settlement).
   */
  async run(kind: OperationKind, entityId: string, paymentId: string, body: OperationBody, opts: OperationOptions): Promise<OperationResult> {
    const opId = randomUUID();
    return (await this.optimistic(kind, entityId, paymentId, body, opts, opId)) ?? this.locked(kind, entityId, paymentId, body, opts, opId);
  }

  /** The locked strategy: reserve under the row lock, call the partners, settle (finalize). */
  private async locked(kind: OperationKind, entityId: string, paymentId: string, body: OperationBody, opts: OperationOptions, opId: string): Promise<OperationResult> {
    // A replayed key is found under the row lock below and answered after the lock is
    // released (held while the first call is in flight), before any amount check.
    // (One such transaction per payment at a time in this process: a busy payment holds one connection, row-gate.ts.)
    const reservation = await this.db.onRow(paymentId, () => this.db.transaction(async (tx) => {
      const p = await paymentsRepo.get(tx, entityId, paymentId, true);
      if (!p) throw problems.notFound(`Payment ${paymentId} does not exist.`);
      faultPoint(`${kind.toLowerCase()}:under-lock`);
      if (opts.idempotencyKey && p.idempotency_key === opts.idempotencyKey) throw problems.idempotencyViolation(opts.instance, p.id, false);
      if (opts.idempotencyKey && (await paymentsRepo.operationByKey(tx, paymentId, opts.idempotencyKey))) return 'replay' as const;
      const { auths, nextSeq } = await paymentsRepo.authorizations(tx, paymentId, p.split.length);
      const { amount, allocations } = await this.planWith(kind, p, auths, () => paymentsRepo.txs(tx, paymentId), body);
      const rows = pendingChildren(kind, paymentId, opId, nextSeq, allocations); // numbered after the ledger as read under the lock
      // (The operation, its ledger rows and the payment's next version in one statement.)
      const reserved = await moneyWriter.reserve(tx, { shape: 'operation', op: {
        id: opId, payment_id: paymentId, kind, amount, status: 'PENDING', triggered_by: opts.triggeredBy ?? 'MERCHANT',
        merchant_reference: body.merchant_reference ?? null, reason: body.reason ?? null, idempotency_key: opts.idempotencyKey ?? null,
        request_fingerprint: opts.fingerprint ?? null,
      }, rows, parents: auths });
      if (!reserved) return 'replay' as const;
      return { payment: p, children: rows.map((r, i) => ({ id: r.id, key: r.partner_key, amount: r.amount, auth: allocations[i]!.auth })) };
    }));
    if (reservation === 'replay') return this.replayed(paymentId, opts.idempotencyKey!, opts.instance);
    return this.callAndSettle(kind, opId, reservation.payment, reservation.children, undefined);
  }

  /**
   * Calls the partner of each reserved transaction in turn, outside any transaction, and
   * records its answer; then finalizes the payment under its row lock. With `oneStatement`
   * (an optimistic reservation of one transaction), the answer, the operation's status and
   * the event are written together instead, when nothing changed the payment meanwhile.
   */
  private async callAndSettle(kind: OperationKind, opId: string, p: PaymentRow, children: Array<{ id: string; key: string; amount: number; auth: PartnerTxRow }>,
    oneStatement: Parameters<OperationsService['conclude']>[1] | undefined): Promise<OperationResult> {
    const step = kind.toLowerCase();
    const entityId = p.entity_id;
    faultPoint(`${step}:after-reserve`);
    for (const c of children) {
      const connector = this.partners.get(c.auth.partner)!;
      // The row as reserved, counted against its authorization as read under the lock.
      const row: CountedRow = { id: c.id, kind, status: 'PENDING', amount: c.amount, parent_id: c.auth.id };
      const req = { key: c.key, entityId, authorization_reference: c.auth.partner_reference ?? '', amount: c.amount, currency: p.currency };
      const call = kind === 'CAPTURE' ? () => connector.capture(req) : kind === 'REFUND' ? () => connector.refund(req) : () => connector.void(req);
      const update = txUpdate(kind, await callPartner(call, this.config.partnerTimeoutMs,
        (r) => void this.payments.answeredLate(entityId, p.id, row, [c.auth], r),
        { telemetry: this.config.telemetry, partner: c.auth.partner, call: step, key: c.key }));
      faultPoint(`${step}:after-partner`);
      if (update && oneStatement) {
        const view = await this.conclude(p, oneStatement, update);
        if (view) {
          faultPoint(`${step}:after-finalize`);
          return { payment: view, operationId: opId };
        }
      }
      // (After a conclusion that did not apply, a no-op when it settled the transaction.)
      if (update) await this.db.onRow(p.id, () => moneyWriter.record(this.db, { shape: 'answer', tx: row, parents: [c.auth], update }));
    }
    faultPoint(`${step}:after-record`);
    const view = await this.payments.finalize(entityId, p.id, { endProcessing: false, recover: false });
    faultPoint(`${step}:after-finalize`);
    return { payment: view ?? (await this.payments.getStored(entityId, p.id)), operationId: opId };
  }
}
