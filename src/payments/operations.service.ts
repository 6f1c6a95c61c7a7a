// Captures, refunds and voids: one pipeline (docs/architecture.md, "The payments pipeline").
//
//   run ─▶ reserve ─▶ call ─▶ conclude
//
// reserve decides on a reading of the payment and writes that decision in one statement
// guarded by the version read or by the payment's row lock, so concurrent requests in any
// number of payd processes never take more than is available; when every partner answers
// inline, that statement is the whole outcome and the pipeline ends there. call asks each
// partner outside any transaction, with a partner key derived from the operation id, and
// records each answer as it comes. conclude writes the end: in one statement when nobody
// touched the payment meanwhile (one row, its answer written with it), else the payment
// finalized under its row lock.
import { randomUUID } from 'node:crypto';
import type { Db } from '../platform/db/index.ts';
import { faultPoint } from '../platform/fault-points.ts';
import type { FirstRequest } from '../platform/http/idempotency.ts';
import { Problem, problems } from '../platform/http/problem.ts';
import type { FollowUpRequest, PartnerRegistry } from '../partners/port.ts';
import { type Slice, allocate } from './amounts.ts';
import { OPERATIONS, REFUSALS, STATES, allowedIn, availableFor, balanceFor, operationOf } from './transitions.ts';
import { holdWhileInFlight } from './idempotency.ts';
import { answerInline } from '../partners/inline.ts';
import { callPartner, txUpdate } from './partner-calls.ts';
import { type Ledger, type NewOperation, type NewPartnerTx, type OperationKind, type OperationRow, type PartnerTxRow, type PaymentRow, type TxUpdate, newTxRow, nextSeqOf, paymentsRepo, pendingChildren, settledTxRow } from './payments.repo.ts';
import { isOperationKeyConflict, moneyWriter, restingTotals } from './money.repo.ts';
import { needsNothingElse, outcomeOf } from './outcome.ts';
import { paymentView, reservedOfPayment, slicesOfPayment, totalsOfPayment } from './payment-view.ts';
import { paymentEvents } from './payment-events.ts';
import type { OperationBody } from './payments.schemas.ts';
import { nothingPending } from './recent-payments.ts';
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

/** What was asked: the operation's kind, its payment, the request, and the id the operation gets. */
interface Ask { kind: OperationKind; entityId: string; paymentId: string; body: OperationBody; opts: OperationOptions; opId: string }

/** A reading of the payment: its row, and what the decision reads of the rest only when it needs it. */
interface Reading {
  payment: PaymentRow;
  /** Recalled (recent-payments.ts), not read: a refusal on it is decided again on what is stored. */
  recalled: boolean;
  keyTaken(key: string): boolean | Promise<boolean>;
  authorizations(): { auths: PartnerTxRow[]; nextSeq: number } | Promise<{ auths: PartnerTxRow[]; nextSeq: number }>;
  ledger(): PartnerTxRow[] | Promise<PartnerTxRow[]>;
}

/** A reserved ledger row (PENDING) and the authorization it draws on, as read. */
interface Child { tx: NewPartnerTx; auth: PartnerTxRow }

/** The decision: the operation (PENDING), its rows, and the payment's authorizations (the rows' parents). */
interface Decision { op: NewOperation; children: Child[]; auths: PartnerTxRow[] }

/** What reserve leaves for the partner calls. */
interface Reservation {
  /** The payment as read for the decision (before the reservation). */
  payment: PaymentRow;
  op: NewOperation;
  children: Child[];
  /** For the one-statement end (one row reserved on a reading with nothing PENDING): that reading, the reservation's time. */
  oneStatement?: { reading: Ledger; at: Date } | undefined;
}

/** 'stale': decide again on what is stored; 'locked': decide under the row lock. */
type Attempt = Reservation | { concluded: PaymentViewT } | 'stale' | 'locked';

/** The request to a partner for a reserved row. */
const followUp = (p: PaymentRow, c: Child): FollowUpRequest =>
  ({ key: c.tx.partner_key, entityId: p.entity_id, authorization_reference: c.auth.partner_reference ?? '', amount: c.tx.amount, currency: p.currency });

export class OperationsService {
  constructor(
    private readonly db: Db,
    private readonly partners: PartnerRegistry,
    private readonly payments: PaymentsService,
    private readonly config: PaymentsConfig,
  ) {}

  /** One operation: reserve, call the partners, conclude. */
  async run(kind: OperationKind, entityId: string, paymentId: string, body: OperationBody, opts: OperationOptions): Promise<OperationResult> {
    const ask: Ask = { kind, entityId, paymentId, body, opts, opId: randomUUID() };
    const reserved = await this.reserve(ask);
    if ('concluded' in reserved) return { payment: reserved.concluded, operationId: ask.opId };
    faultPoint(`${kind.toLowerCase()}:after-reserve`);
    const updates = await this.call(reserved);
    return { payment: await this.conclude(reserved, updates), operationId: ask.opId };
  }

  /**
   * Step 1: decide (decide, the same on every reading) and write. Readings, in turn: the
   * payment as this process last wrote it (recalled), as read now, and under its row lock;
   * the first two write only at the version read (reserveAtVersion: every reservation
   * moves the version, so the amount check made on it still holds). A recalled reading
   * that refuses, or a write that applied nothing, is decided again on the next reading.
   */
  private async reserve(ask: Ask): Promise<Reservation | { concluded: PaymentViewT }> {
    const recalled = this.config.recent?.recall(ask.entityId, ask.paymentId);
    let attempt: Attempt = recalled ? await this.reserveAtVersion(ask, recalled, true) : 'stale';
    if (attempt === 'stale') {
      if (recalled) this.config.recent!.forget(ask.paymentId); // changed since this process wrote it
      const found = await paymentsRepo.getWithLedger(this.db, ask.entityId, ask.paymentId);
      if (!found) throw problems.notFound(`Payment ${ask.paymentId} does not exist.`);
      attempt = await this.reserveAtVersion(ask, found, false);
    }
    if (attempt !== 'stale' && attempt !== 'locked') return attempt;

    // Under the row lock, a replayed key is found before any amount check and answered
    // once the lock is released. (One such transaction per payment at a time in this
    // process: a busy payment holds one connection, row-gate.ts.)
    const locked = await this.db.onRow(ask.paymentId, () => this.db.transaction(async (tx) => {
      const p = await paymentsRepo.get(tx, ask.entityId, ask.paymentId, true);
      if (!p) throw problems.notFound(`Payment ${ask.paymentId} does not exist.`);
      faultPoint(`${ask.kind.toLowerCase()}:under-lock`);
      const d = await this.decide(ask, {
        payment: p, recalled: false,
        keyTaken: async (key) => (await paymentsRepo.operationByKey(tx, p.id, key)) !== undefined,
        authorizations: () => paymentsRepo.authorizations(tx, p.id, p.split.length), // rows numbered after the ledger as read under the lock
        ledger: () => paymentsRepo.txs(tx, p.id),
      });
      if (typeof d === 'string') return 'replay' as const; // ('stale' is a recalled reading's only)
      const written = await moneyWriter.reserve(tx, { shape: 'operation', op: d.op, rows: d.children.map((c) => c.tx), parents: d.auths });
      return written ? { payment: p, op: d.op, children: d.children } : 'replay' as const;
    }));
    return locked === 'replay' ? this.replayed(ask) : locked;
  }

  /**
   * The decision on a reading, the same on every one: the key checks, the plan, the
   * operation and its PENDING rows. 'replay': another operation of the payment has the
   * key; 'stale': a recalled reading refused (a refusal is only given on what is stored:
   * a capture made elsewhere since may have made a refund possible).
   */
  private async decide(ask: Ask, reading: Reading): Promise<Decision | 'replay' | 'stale'> {
    const { kind, body, opts, opId } = ask;
    const p = reading.payment;
    // The key that created the payment counts as processed on it (Errors 5).
    if (opts.idempotencyKey && p.idempotency_key === opts.idempotencyKey) throw problems.idempotencyViolation(opts.instance, p.id, false);
    if (opts.idempotencyKey && (await reading.keyTaken(opts.idempotencyKey))) return 'replay';
    const { auths, nextSeq } = await reading.authorizations();
    let planned: ReturnType<OperationsService['plan']>;
    try {
      // (Slices only matter for an AUTHORIZED payment: plan refuses any other first.)
      planned = this.plan(kind, p, p.authorization_status === 'AUTHORIZED' ? await slicesOfPayment(p, auths, () => reading.ledger()) : [], body);
    } catch (err) {
      if (reading.recalled && err instanceof Problem) return 'stale';
      throw err;
    }
    const byId = new Map(auths.map((t) => [t.id, t]));
    const drawn = planned.allocations.map((a) => ({ auth: byId.get(a.id)!, amount: a.amount }));
    const rows = pendingChildren(kind, p.id, opId, nextSeq, drawn);
    const op: NewOperation = {
      id: opId, payment_id: p.id, kind, amount: planned.amount, status: 'PENDING',
      triggered_by: opts.triggeredBy ?? 'MERCHANT', merchant_reference: body.merchant_reference ?? null, reason: body.reason ?? null,
      idempotency_key: opts.idempotencyKey ?? null, request_fingerprint: opts.fingerprint ?? null,
    };
    return { op, children: rows.map((tx, i) => ({ tx, auth: drawn[i]!.auth })), auths };
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

  /**
   * The write on a reading not under the lock (recalled or read; the whole ledger, for
   * the answer), only if the payment is still at the version read. When every partner
   * answers inline, the whole outcome in one statement ('operation, concluded'), else the
   * reservation ('operation' at that version). 'stale': the write applied nothing (or the
   * reading refused); 'locked': a key already used, or an answer this reading cannot build.
   */
  private async reserveAtVersion(ask: Ask, reading: Ledger, recalled: boolean): Promise<Attempt> {
    const { payment: p, txs, ops } = reading;
    // (The whole ledger is read for the answer, a Payment with every operation; the
    // decision takes only the payment row's totals and its authorizations.)
    const d = await this.decide(ask, {
      payment: p, recalled, keyTaken: (key) => ops.some((o) => o.idempotency_key === key),
      authorizations: () => ({ auths: txs.filter((t) => t.kind === 'AUTHORIZATION'), nextSeq: nextSeqOf(txs) }), ledger: () => txs,
    });
    if (d === 'replay') return 'locked';
    if (d === 'stale') return d;
    const rows = d.children.map((c) => c.tx);
    const startedAt = performance.now();
    const answers = d.children.map((c) => answerInline(this.partners.get(c.auth.partner), { kind: ask.kind, request: followUp(p, c) }));
    if (answers.some((r) => !r || r.outcome === 'PENDING')) {
      const at = await this.db.onRow(p.id, () => moneyWriter.reserve(this.db, { shape: 'operation', op: d.op, rows, parents: d.auths, expectedVersion: p.version }));
      if (!at) return 'stale';
      this.config.recent?.forget(p.id);
      return { payment: p, op: d.op, children: d.children, oneStatement: rows.length === 1 && nothingPending(reading) ? { reading, at } : undefined };
    }
    // The answer is built from this reading: it must hold nothing PENDING, which could
    // settle meanwhile without a new version (another operation's answer).
    if (!nothingPending(reading)) return 'locked';
    const now = new Date();
    const op: OperationRow = { ...d.op, created_at: now, updated_at: now };
    const children = rows.map((c, i) => settledTxRow(newTxRow(c, now, now), txUpdate(ask.kind, answers[i])!, now));
    const end = await this.endAlone(p, [...txs, ...children], [...ops, op], op, p.version + 1, now);
    if (!end) return 'locked';
    try {
      const written = await this.db.onRow(p.id, () => moneyWriter.reserve(this.db, { shape: 'operation, concluded', payment: p, at: now, op, txs: children, parents: d.auths, event: end.event }));
      if (!written) return 'stale';
      this.config.recent?.remember({ payment: written, txs: end.txs, ops: end.ops });
    } catch (err) {
      if (!isOperationKeyConflict(err)) throw err;
      return this.replayed(ask);
    }
    // (Counted once written: a reading that turned out stale is decided again.)
    answers.forEach((result, i) => this.config.telemetry?.end(d.children[i]!.auth.partner, ask.kind.toLowerCase(), rows[i]!.partner_key, startedAt, { result: result! }));
    this.config.telemetry?.operationEnded(op.kind, op.status);
    return { concluded: end.view };
  }

  /**
   * Step 2: each reserved row's partner, in turn, outside any transaction; its answer, or
   * undefined (none in time: the row stays PENDING). Each answer is recorded as it comes, so
   * that a process that dies before the next call loses none, unless the one-statement end
   * is to write it (one row).
   */
  private async call(r: Reservation): Promise<Array<TxUpdate | undefined>> {
    const { payment: p, op: { kind } } = r;
    const step = kind.toLowerCase();
    const updates: Array<TxUpdate | undefined> = [];
    for (const c of r.children) {
      const connector = this.partners.get(c.auth.partner)!;
      const req = followUp(p, c);
      const call = kind === 'CAPTURE' ? () => connector.capture(req) : kind === 'REFUND' ? () => connector.refund(req) : () => connector.void(req);
      // (A late answer goes to the row as reserved, counted against its authorization as read.)
      const update = txUpdate(kind, await callPartner(call, this.config.partnerTimeoutMs,
        (late) => void this.payments.answeredLate(p.entity_id, p.id, c.tx, [c.auth], late),
        { telemetry: this.config.telemetry, partner: c.auth.partner, call: step, key: c.tx.partner_key }));
      updates.push(update);
      faultPoint(`${step}:after-partner`);
      if (update && !r.oneStatement) await this.record(p, c, update);
    }
    return updates;
  }

  /** A partner's answer on its reserved row (a no-op when the row was settled already). */
  private record(p: PaymentRow, c: Child, update: TxUpdate): Promise<unknown> {
    return this.db.onRow(p.id, () => moneyWriter.record(this.db, { shape: 'answer', tx: c.tx, parents: [c.auth], update }));
  }

  /**
   * Step 3: the one-statement end ('operation': the answer, the operation's status, the
   * payment's next version and the event) when it applies; else its answer recorded (the
   * others were as they came), then the conclusion under the row lock
   * (PaymentsService.finalize).
   */
  private async conclude(r: Reservation, updates: Array<TxUpdate | undefined>): Promise<PaymentViewT> {
    const { payment: p, op: { kind } } = r;
    const step = kind.toLowerCase();
    const one = r.oneStatement;
    const update = updates[0];
    if (one && update && update.status !== 'PENDING') {
      const at = new Date();
      const reserved = newTxRow(r.children[0]!.tx, one.at, one.at);
      const op: OperationRow = { ...r.op, created_at: one.at, updated_at: at };
      const end = await this.endAlone(p, [...one.reading.txs, settledTxRow(reserved, update, at)], [...one.reading.ops, op], op, p.version + 2, at);
      const done = end && await this.db.onRow(p.id, () => moneyWriter.conclude(this.db, {
        shape: 'operation', tx: reserved, parents: one.reading.txs, update, paymentId: p.id, expectedVersion: p.version + 1, operationId: op.id, status: op.status, at, event: end.event,
      }));
      if (end && done?.concluded) {
        this.config.recent?.remember({ payment: { ...end.next, ...restingTotals(end.txs, end.ops) }, txs: end.txs, ops: end.ops });
        this.config.telemetry?.operationEnded(op.kind, op.status);
        faultPoint(`${step}:after-finalize`);
        return end.view;
      }
    }
    // (The answer the one-statement end did not write: a no-op when it settled the row.)
    if (one && update) await this.record(p, r.children[0]!, update);
    faultPoint(`${step}:after-record`);
    const view = await this.payments.finalize(p.entity_id, p.id, { endProcessing: false, recover: false });
    faultPoint(`${step}:after-finalize`);
    return view ?? (await this.payments.getStored(p.entity_id, p.id));
  }

  /**
   * The end of `op` written alone, for the one-statement shapes: the payment at `version`
   * with the rows `txs` and `ops` as that statement leaves them, its answer and its event,
   * `op` given its status. undefined when outcome.ts says more changes (the payment's own
   * status, another operation, a release), which only the conclusion under the row lock
   * writes.
   */
  private async endAlone(p: PaymentRow, txs: PartnerTxRow[], ops: OperationRow[], op: OperationRow, version: number, at: Date) {
    const outcome = outcomeOf(p, txs, ops, { endProcessing: false, capturesOnce: (partner) => this.partners.capturesOnce(partner) });
    const mine = outcome.operations.find((o) => o.op === op);
    if (outcome.changed || !needsNothingElse(outcome) || outcome.operations.length !== (mine ? 1 : 0)) return undefined;
    op.status = mine?.status ?? op.status;
    const next = { ...p, version, updated_at: at };
    const view = paymentView(next, txs, ops, this.config.baseUrl);
    return { next, txs, ops, view, event: (await paymentEvents(this.db, p, view, outcome.events))[0] };
  }

  /** The first operation of the payment with this key, waited for while it is in flight (PENDING). */
  private firstWith(paymentId: string, key: string): Promise<OperationRow | undefined> {
    return holdWhileInFlight(() => paymentsRepo.operationByKey(this.db, paymentId, key), (o) => o.status === 'PENDING', this.config);
  }

  /** The 409 for a key used first by another operation on this payment, once that one has ended (or the hold is over). */
  private async replayed(ask: Ask): Promise<never> {
    const first = await this.firstWith(ask.paymentId, ask.opts.idempotencyKey!);
    if (first) throw problems.idempotencyViolation(ask.opts.instance, first.id);
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
    const first = await this.firstWith(paymentId, key);
    return first && { id: first.id, fingerprint: first.request_fingerprint ?? null };
  }
}
