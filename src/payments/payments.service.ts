// Payments: creation (authorization across the split), reading with partner sync,
// settling pending partner transactions, and the reversal of half-authorized splits.
// No HTTP and no SQL here: repos hold the SQL, connectors talk to partners.
import { type Clock, systemClock } from '../platform/clock.ts';
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../platform/db/index.ts';
import { isConnectionFailure } from '../platform/db/errors.ts';
import { faultPoint } from '../platform/fault-points.ts';
import type { FirstRequest } from '../platform/http/idempotency.ts';
import { problems } from '../platform/http/problem.ts';
import type { AuthorizeRequest, CardInstrument, GiftCardInstrument, Instrument, PartnerNotification, PartnerRegistry, PartnerResult } from '../partners/port.ts';
import { methodMeaning } from '../partners/methods.ts';
import { cardDetails, luhnValid } from './cards.ts';
import { keptCards, savedAgain } from './saved-cards.service.ts';
import { clientSessionsRepo, type ClientSessionRow } from './client-sessions.repo.ts';
import { ClientSessionsService } from './client-sessions.service.ts';
import { holdWhileInFlight } from './idempotency.ts';
import { answerInline } from '../partners/inline.ts';
import { NotSettled, type PartnerTelemetry } from './partner-telemetry.ts';
import { callPartner, txUpdate } from './partner-calls.ts';
import type { CreatePaymentBody } from './payments.schemas.ts';
import { type NewPartnerTx, type NewPayment, type OperationRow, type PartnerTxRow, type PaymentBase, type PaymentRow, type TxUpdate, newTxRow, nextSeqOf, paymentsRepo, pendingChildren, settledTxRow } from './payments.repo.ts';
import { type ReleaseRecord, moneyWriter, restingTotals } from './money.repo.ts';
import type { CountedRow, ParentRow } from './ledger-totals.ts';
import { type Release, needsNothingElse, outcomeOf } from './outcome.ts';
import { VIEW_FORMAT, paymentView } from './payment-view.ts';
import { type Filter, listsRepo, type PageRequest } from './lists.repo.ts';
import { paymentJson } from './payment-json.ts';
import type { RecentPayments } from './recent-payments.ts';
import { operationEventType, paymentEvents } from './payment-events.ts';
import type { ReturnLinks } from './return-links.ts';
import type { EligibilityEngine } from '../eligibility/engine.ts';

export interface PaymentsConfig {
  baseUrl: string;
  /** The entity's eligibility rules, applied to API payments (absent: not checked, as in unit tests of the service alone). */
  eligibility?: Pick<EligibilityEngine, 'refusedParts'>;
  /** The signed addresses shoppers come back to (the 3-D Secure return). */
  returnLinks: ReturnLinks;
  fingerprintKey: Buffer;
  partnerTimeoutMs: number;
  /** Captures, refunds and voids one payment may have, all kinds together. */
  maxOperationsPerPayment: number;
  /** Payment attempts one client session takes (ClientSessionsService.paymentRefusal). */
  sessionMaxAttempts: number;
  /** Replays of an in-flight request wait this many times holdIntervalMs before the 409. */
  holdAttempts: number;
  holdIntervalMs: number;
  /** Partner calls counted and their failures logged (partner-telemetry.ts). */
  telemetry?: PartnerTelemetry;
  /** Decides a client session's expiry (default the system clock; tests move it). */
  clock?: Clock;
  /** The payments this process wrote last, for the operation that follows (recent-payments.ts). */
  recent?: RecentPayments;
}

export type PaymentViewT = ReturnType<typeof paymentView>;

interface ReversalOptions {
  key: string;
  reason: string;
  /** Runs first, under the row lock; false: nothing to reverse. */
  before?: (tx: Queryable) => Promise<boolean>;
}

/** An authorization closed because its 3-D Secure challenge was left (expireChallenges). */
const expired = (expirySeconds: number): TxUpdate => ({
  status: 'ERROR', partner_status: 'EXPIRED', status_code: 'CHALLENGE_EXPIRED', redirection: null,
  partner_status_description: `The shopper did not complete 3-D Secure within ${Math.round(expirySeconds / 60)} minutes; the partner cancelled the authorization`,
});

const DEFAULT_REVERSAL = (paymentId: string): ReversalOptions =>
  ({ key: `reversal:${paymentId}`, reason: 'Reversal of a split payment that was not fully authorized' });

/**
 * The rows of a release (outcome.ts, Release) as written at `at`: a SYSTEM void that has
 * succeeded, one ledger row per authorization released, numbered after `ledger`, each
 * with the partner key `<operation id>:<n>` and what the partner's release is (its
 * reference is the authorization's). No partner is called: the capture's success is it.
 */
function releaseRows(p: PaymentRow, r: Release, ledger: PartnerTxRow[], at: Date): { op: OperationRow; rows: PartnerTxRow[] } {
  const opId = randomUUID();
  const op: OperationRow = {
    id: opId, payment_id: p.id, kind: 'VOID', amount: r.parts.reduce((s, x) => s + x.amount, 0), status: 'SUCCESS', triggered_by: 'SYSTEM',
    merchant_reference: null, reason: r.reason, idempotency_key: r.key, request_fingerprint: null, created_at: at, updated_at: at,
  };
  const rows = pendingChildren('VOID', p.id, opId, nextSeqOf(ledger), r.parts).map((row, i) => settledTxRow(newTxRow(row, at, at), {
    status: 'SUCCESS', partner_reference: r.parts[i]!.auth.partner_reference ?? undefined, partner_status: 'released', status_code: 'SUCCEEDED',
    partner_status_description: 'The partner released the rest of the authorization with the partial capture',
  }, at));
  return { op, rows };
}

/** Slack added to the partner timeout before a call is surely over (the timer starts just after the row is written). */
const DEADLINE_MARGIN_MS = 250;
/** How long a late partner answer met by a database outage is retried (a Patroni failover with its default ttl of 30 s fits). */
const LATE_ANSWER_RETRY_MS = 60_000;
const LATE_ANSWER_RETRY_INTERVAL_MS = 500;

/** One part of a payment being created: its ledger row (PENDING until its partner answers) and its partner call. */
interface PlannedPart {
  partner: string;
  row: NewPartnerTx;
  request: AuthorizeRequest;
}

/** What follows an authorization, given by the orchestrator (payments/after-authorization.ts). */
export interface AuthorizationSteps {
  /** An AUTOMATIC payment is AUTHORIZED: capture this amount (once, whoever calls first). */
  authorized(entityId: string, paymentId: string, capture: number): Promise<void>;
}

export class PaymentsService {
  constructor(
    private readonly db: Db,
    private readonly partners: PartnerRegistry,
    private readonly config: PaymentsConfig,
    private readonly steps?: AuthorizationSteps,
  ) {}

  /** What a stored view is valid for: this release's view format and base URL (payment-view.ts). */
  private get viewFormat(): string {
    return `${VIEW_FORMAT}|${this.config.baseUrl}`;
  }

  /** Whether the partner captures an authorization once (PartnerConnector.capturesOnce): what outcome.ts releases. */
  private readonly capturesOnce = (partner: string): boolean => this.partners.capturesOnce(partner);

  // ---- reading ----

  /** The payment as stored (no partner call), or a bodiless 404. */
  async getStored(entityId: string, id: string): Promise<PaymentViewT> {
    const found = await this.withLedger(entityId, id);
    return paymentView(found.payment, found.txs, found.ops, this.config.baseUrl);
  }

  /** The payment as stored, read on q (a replica, for reads that allow staleness), or undefined. */
  async findStored(entityId: string, id: string, q: Queryable): Promise<PaymentViewT | undefined> {
    const found = await paymentsRepo.getWithLedger(q, entityId, id);
    return found && paymentView(found.payment, found.txs, found.ops, this.config.baseUrl);
  }

  /** The payment with its ledger and operations, or a bodiless 404. */
  private async withLedger(entityId: string, id: string) {
    const found = await paymentsRepo.getWithLedger(this.db, entityId, id);
    if (!found) throw problems.notFoundNoBody();
    return found;
  }

  /**
   * The payment as stored, as the JSON text the API sends, or a bodiless 404. Served
   * from the stored view when it is valid; else built from the ledger and, for a
   * payment at rest, stored for the next read.
   */
  async getStoredJson(entityId: string, id: string): Promise<string> {
    const text = await this.findStoredJson(entityId, id, this.db);
    if (text === undefined) throw problems.notFoundNoBody();
    return text;
  }

  /**
   * getStoredJson read on q, or undefined when q has no such payment. A view built from
   * a replica (q is not the primary) is not stored: the primary builds its own.
   */
  async findStoredJson(entityId: string, id: string, q: Queryable): Promise<string | undefined> {
    const stored = await paymentsRepo.storedView(q, entityId, id, this.viewFormat);
    if (!stored) return undefined;
    if (stored.view !== null) return stored.view;
    return (await this.buildViews(entityId, [id], q)).get(id);
  }

  /**
   * The JSON text of each of these payments of the entity found on q, built from their
   * ledgers with one read; the views of those at rest are kept with one write (on the
   * primary only), so that the next read of their version is served as stored.
   */
  private async buildViews(entityId: string, ids: readonly string[], q: Queryable): Promise<Map<string, string>> {
    const texts = new Map<string, string>();
    const keep: Array<{ id: string; version: number; view: string }> = [];
    for (const { payment, txs, ops } of await paymentsRepo.getManyWithLedger(q, entityId, ids)) {
      const text = paymentJson(paymentView(payment, txs, ops, this.config.baseUrl));
      texts.set(payment.id, text);
      if (!payment.processing && !txs.some((t) => t.status === 'PENDING')) keep.push({ id: payment.id, version: payment.version, view: text });
    }
    if (q === this.db && keep.length > 0) await paymentsRepo.saveViews(this.db, this.viewFormat, keep);
    return texts;
  }

  /**
   * A page of the entity's payments as stored (no partner call), each as the JSON text
   * GET /v2/payments/{id} sends with max-age, with its customer's email (which the view
   * does not carry; the dashboard's CSV export shows it); limit + 1 of them (has_more), or
   * undefined when the cursor is not one of the entity's payments. The views the page
   * lacks (its newest payments, typically) are built together: one read, one write.
   */
  async listStoredJson(entityId: string, req: PageRequest, filter: Filter, q: Queryable = this.db): Promise<Array<{ id: string; text: string; customer_email: string | null }> | undefined> {
    const rows = await listsRepo.payments(q, entityId, req, filter, this.viewFormat);
    if (!rows) return undefined;
    const lacking = rows.filter((r) => r.view === null).map((r) => r.id);
    const built = lacking.length > 0 ? await this.buildViews(entityId, lacking, q) : new Map<string, string>();
    const page: Array<{ id: string; text: string; customer_email: string | null }> = [];
    for (const r of rows) {
      // (A payment listed is there when its ledger is read on the same database: payments are never deleted.)
      page.push({ id: r.id, text: r.view ?? built.get(r.id) ?? await this.getStoredJson(entityId, r.id), customer_email: r.customer_email ?? null });
    }
    return page;
  }

  /** The payment row by id alone, for browser paths that carry no merchant credential. */
  async findById(id: string): Promise<PaymentRow | undefined> {
    return paymentsRepo.getById(this.db, id);
  }

  /** The payment after asking partners about every transaction still PENDING. */
  async get(entityId: string, id: string): Promise<PaymentViewT> {
    // One statement for a payment at rest (the common read: a merchant polling it); one
    // with something PENDING is settled first (its partners asked), then read again.
    const found = await this.withLedger(entityId, id);
    if (await this.settle(found.payment, { recover: false }, found)) return this.getStored(entityId, id);
    return paymentView(found.payment, found.txs, found.ops, this.config.baseUrl);
  }

  // ---- creation ----

  private validate(entityId: string, body: CreatePaymentBody): void {
    if (body.entity_id && body.entity_id !== entityId) {
      throw problems.forbidden('entity_id does not match the entity of the credentials.');
    }
    const sum = body.split.reduce((s, part) => s + part.amount, 0);
    if (sum !== body.amount) {
      throw problems.invalidField('split', `the split amounts add up to ${sum} but amount is ${body.amount}`);
    }
    if (body.split.filter((p) => methodMeaning(p.method).onePerPayment).length > 1) {
      throw problems.invalidField('split', 'at most one part may be paid by CARD');
    }
    body.split.forEach((part, i) => {
      const name = `split[${i}]`;
      const connector = this.partners.get(part.partner);
      if (!connector) throw problems.invalidField(`${name}.partner`, `unknown partner "${part.partner}"`);
      if (connector.serves && !connector.serves(entityId)) {
        throw problems.invalidField(`${name}.partner`, `partner ${part.partner} is not configured for this entity`);
      }
      if (!connector.methods.includes(part.method)) {
        throw problems.invalidField(`${name}.method`, `partner ${part.partner} does not offer ${part.method} (it offers ${connector.methods.join(', ')})`);
      }
      if (!connector.limits.currencies.includes(body.currency)) {
        throw problems.invalidField('currency', `partner ${part.partner} does not accept ${body.currency}`);
      }
      const wanted = methodMeaning(part.method).instrument;
      if (wanted && part.instrument?.type !== wanted && !(methodMeaning(part.method).cardOnFile && part.instrument?.type === 'SAVED_CARD')) {
        throw problems.invalidField(`${name}.instrument`, `a ${wanted} instrument is required for method ${part.method}`);
      }
      if (!wanted && part.instrument) {
        throw problems.invalidField(`${name}.instrument`, `method ${part.method} takes no instrument`);
      }
      if (part.instrument?.type === 'CARD' && !luhnValid(part.instrument.number)) {
        throw problems.invalidField(`${name}.instrument.number`, 'is not a valid card number (Luhn check failed)');
      }
    });
  }

  /**
   * A new payment. A key already used is found by the payment's own write (ON CONFLICT on
   * the key: nothing written, then the 409); a refusal of a request whose key was used is
   * made a 409 by the route (platform/http/idempotency.ts, ownKey).
   */
  async create(entityId: string, body: CreatePaymentBody, idempotencyKey: string | undefined, instance: string,
    fingerprint?: string): Promise<PaymentViewT> {
    this.validate(entityId, body);
    // A client session that does not exist (or is another entity's) is the spec's 404 with no body.
    const session = body.client_session_id ? await clientSessionsRepo.get(this.db, entityId, body.client_session_id) : undefined;
    if (body.client_session_id && !session) throw problems.notFoundNoBody();
    // The entity's eligibility rules hold for API payments as for the widget's offer; with a
    // client session, for the session's order and customer (those its offer was made for),
    // the body's where the session has none.
    const refused = this.config.eligibility
      ? await this.config.eligibility.refusedParts(entityId, {
        amount: body.amount, currency: body.currency, order: session?.order ?? body.order, customer: session?.customer ?? body.customer,
      }, body.split)
      : [];
    if (refused.length) {
      const { part, rule, says } = refused[0]!;
      throw problems.invalidField(`split[${part}]`,
        `${body.split[part]!.partner}/${body.split[part]!.method} is not an eligible solution for this order: the entity's eligibility rule rules[${rule}] refuses it (${says}); POST /v2/eligible-solutions lists those that are eligible`);
    }
    const captureMode = this.captureModeOf(body, session);
    const kept = await keptCards(this.db, entityId, body, (this.config.clock ?? systemClock)()); // (SAVED_CARD instruments)
    const again = await savedAgain(this.db, this.config.fingerprintKey, entityId, body); // (a card saved again: merged into its saved card)

    const id = randomUUID();
    // Gift cards first (their balance decides early), cards last (a 3-D Secure challenge
    // suspends the authorization, so nothing may come after it).
    const rank = (m: string) => methodMeaning(m).rank;
    const parts = [...body.split].sort((a, b) => rank(a.method) - rank(b.method));
    // allow_future_usage asks for the card to be kept on file: its card part saves a token
    // unless the part says otherwise (save_token: false).
    const saveToken = (part: (typeof parts)[number]) => (kept.has(part) ? undefined
      : part.save_token ?? (body.allow_future_usage && methodMeaning(part.method).cardOnFile ? true : undefined));
    const planned = parts.map((part, i): PlannedPart => {
      const instrument: Instrument = kept.get(part)?.instrument ?? (part.instrument ? (part.instrument as CardInstrument | GiftCardInstrument) : { type: 'NONE' });
      const card = kept.get(part)?.card ?? again.get(part) ?? (instrument.type === 'CARD' ? cardDetails(this.config.fingerprintKey, entityId, instrument) : undefined);
      const row: NewPartnerTx = {
        id: randomUUID(), payment_id: id, operation_id: null, parent_id: null, kind: 'AUTHORIZATION', seq: i + 1,
        partner: part.partner, method: part.method, amount: part.amount, status: 'PENDING', partner_key: `${id}:${i + 1}`,
        card: (card as Record<string, unknown> | undefined) ?? null, save_token: saveToken(part) ?? null,
      };
      const request: AuthorizeRequest = {
        key: row.partner_key, entityId, method: part.method, amount: part.amount, currency: body.currency, instrument,
        ...(card ? { card } : {}),
        save_token: saveToken(part) ?? false,
        customer: body.customer as Record<string, unknown> | undefined,
        browser: body.browser as Record<string, unknown> | undefined,
        three_ds: body.three_ds_authentication_options,
        return_url: this.config.returnLinks.threeDsReturnUrl(id),
      };
      return { partner: part.partner, row, request };
    });
    const newPayment: NewPayment = {
      id,
      entity_id: entityId,
      amount: body.amount,
      currency: body.currency,
      capture_mode: captureMode,
      allow_future_usage: body.allow_future_usage ?? false,
      client_session_id: body.client_session_id ?? null,
      order_reference: body.order?.reference ?? null,
      order: (body.order as Record<string, unknown> | undefined) ?? null,
      customer: (body.customer as Record<string, unknown> | undefined) ?? null,
      browser: (body.browser as Record<string, unknown> | undefined) ?? null,
      split: body.split.map((s) => ({ partner: s.partner, method: s.method, amount: s.amount })),
      authorization_status: 'PENDING',
      processing: true,
      idempotency_key: idempotencyKey ?? null,
      request_fingerprint: idempotencyKey ? fingerprint ?? null : null,
    };
    // The reservation strategy: partners that answer inline (pure decisions, nothing held
    // elsewhere) give the outcome now, and the payment is written whole, concluded, in one
    // statement; any other partner makes it write ahead.
    const startedAt = performance.now();
    const inline = this.inlineAnswers(planned);
    if (!inline) return this.writeAhead(entityId, body, newPayment, planned, idempotencyKey, instance);
    // Answered in process, counted as partner calls all the same (authorizations by partner and outcome).
    inline.forEach((result, i) => this.config.telemetry?.end(planned[i]!.partner, 'authorize', planned[i]!.row.partner_key, startedAt, { result }));
    return this.createInline(entityId, body, newPayment, planned.map((p) => p.row), inline, idempotencyKey, instance);
  }

  /**
   * The write-ahead strategy: the payment and its first authorization row are written
   * (PENDING) before any partner is called, then each part is authorized in turn, outside
   * any transaction, its answer recorded, and the payment concluded.
   */
  private async writeAhead(entityId: string, body: CreatePaymentBody, newPayment: NewPayment,
    parts: PlannedPart[], idempotencyKey: string | undefined, instance: string): Promise<PaymentViewT> {
    const id = newPayment.id;
    // The payment and its first authorization row: one statement, or a transaction that
    // also claims the client session.
    const created = await this.claimingSession(entityId, body, id, (q) => moneyWriter.reserve(q, { shape: 'payment', payment: newPayment, first: parts[0]!.row }));
    if (!created) return this.replayed(entityId, idempotencyKey!, instance); // another request with the same key won the race

    // Authorize part by part; the ledger rows as this request leaves them, for the answer.
    const rows: PartnerTxRow[] = [];
    let last: { row: PartnerTxRow; update: TxUpdate | undefined } | undefined;
    for (const [i, { partner, row, request }] of parts.entries()) {
      const stored = i === 0 ? created.tx : await this.db.onRow(id, () => moneyWriter.reserve(this.db, { shape: 'part', row }));
      faultPoint('authorize:after-reserve');
      const connector = this.partners.get(partner)!;
      const result = await callPartner(() => connector.authorize(request), this.config.partnerTimeoutMs,
        (r) => void this.answeredLate(entityId, id, stored, [], r), { telemetry: this.config.telemetry, partner, call: 'authorize', key: row.partner_key });
      faultPoint('authorize:after-partner');
      const update = txUpdate('AUTHORIZATION', result);
      const final = update?.status !== 'AUTHORIZED' || i === parts.length - 1;
      if (final) {
        last = { row: stored, update };
        break;
      }
      const at = await this.db.onRow(id, () => moneyWriter.record(this.db, { shape: 'answer', tx: stored, parents: [], update: update! }));
      faultPoint('authorize:after-record');
      rows.push(at ? settledTxRow(stored, update!, at) : stored);
    }

    const fast = last && (await this.concludeCreation(created.payment, rows, last.row, last.update));
    if (fast) {
      faultPoint('authorize:after-finalize');
      return fast;
    }
    if (last?.update) await this.db.onRow(id, () => moneyWriter.record(this.db, { shape: 'answer', tx: last.row, parents: [], update: last.update! }));
    faultPoint('authorize:after-record');
    const view = await this.finalize(entityId, id, { endProcessing: true, recover: false });
    faultPoint('authorize:after-finalize');
    return view ?? this.getStored(entityId, id);
  }

  /**
   * The answers of every part when all their partners answer inline with a final
   * outcome, and the outcome needs nothing else (all authorized, or a single part
   * refused). undefined: the regular path (write-ahead record, calls, conclusion).
   */
  private inlineAnswers(parts: PlannedPart[]): PartnerResult[] | undefined {
    const results: PartnerResult[] = [];
    for (const { partner, request } of parts) {
      const r = answerInline(this.partners.get(partner), { kind: 'AUTHORIZATION', request });
      if (!r || r.outcome === 'PENDING') return undefined;
      results.push(r);
    }
    if (results.length > 1 && results.some((r) => r.outcome !== 'SUCCESS')) return undefined; // a split to reverse
    return results;
  }

  private async createInline(entityId: string, body: CreatePaymentBody, np: NewPayment, rows: NewPartnerTx[], results: PartnerResult[],
    idempotencyKey: string | undefined, instance: string): Promise<PaymentViewT> {
    const now = new Date();
    const txs = rows.map((row, i) => settledTxRow(newTxRow(row, now, now), txUpdate('AUTHORIZATION', results[i])!, now));
    const outcome = outcomeOf(np, txs, [], { endProcessing: true, capturesOnce: this.capturesOnce });
    const p: PaymentBase = Object.assign({ version: 1, created_at: now, updated_at: now }, np, { authorization_status: outcome.status, processing: false });
    const view = paymentView(p, txs, [], this.config.baseUrl);
    const write = async (q: Queryable) => moneyWriter.reserve(q, { shape: 'payment, concluded', payment: p, txs, event: (await paymentEvents(q, p, view, outcome.events))[0] });
    const written = await this.claimingSession(entityId, body, p.id, write);
    if (!written) return this.replayed(entityId, idempotencyKey!, instance); // another request with the same key won the race
    this.config.recent?.remember({ payment: written, txs, ops: [] }); // (committed: claimingSession's transaction has ended)
    if (outcome.capture && this.steps) {
      await this.steps.authorized(entityId, p.id, outcome.capture);
      return this.getStored(entityId, p.id);
    }
    return view;
  }

  /**
   * The common end of a payment creation in one statement: settles the last partner
   * transaction and records the authorization status, when the outcome needs nothing
   * else (no reversal of a split, no automatic capture, no unknown partner answer) and
   * nobody touched the payment meanwhile. The answer is built from what was written.
   * undefined: the caller takes the general path (finalize under the row lock).
   */
  private async concludeCreation(p: PaymentRow, earlier: PartnerTxRow[], lastRow: PartnerTxRow, update: TxUpdate | undefined): Promise<PaymentViewT | undefined> {
    if (!update) return undefined;
    const at = new Date();
    const txs = [...earlier, settledTxRow(lastRow, update, at)];
    const outcome = outcomeOf(p, txs, [], { endProcessing: true, capturesOnce: this.capturesOnce });
    if (!needsNothingElse(outcome)) return undefined; // a part to reverse, or the automatic capture: under the lock
    const status = outcome.status;
    const next = { ...p, authorization_status: status, processing: false, version: p.version + 1, updated_at: at };
    const view = paymentView(next, txs, [], this.config.baseUrl);
    const event = (await paymentEvents(this.db, p, view, outcome.events))[0];
    if (!(await this.db.onRow(p.id, () => moneyWriter.conclude(this.db, { shape: 'creation', tx: lastRow, update, paymentId: p.id, expectedVersion: p.version, status, at, event })))) return undefined;
    // The next operation on it (commonly its capture) skips the read: recent-payments.ts.
    this.config.recent?.remember({ payment: { ...next, ...restingTotals(txs, []) }, txs, ops: [] });
    return view;
  }

  /** A key already used by this entity: hold while the first request runs, then 409. */
  async refuseReplay(entityId: string, key: string, instance: string): Promise<void> {
    const first = await this.firstWithKey(entityId, key);
    if (first) throw problems.idempotencyViolation(instance, first.id);
  }

  /** The payment this entity created with this key (held while it is being authorized), with its request's fingerprint; undefined when none. */
  async firstWithKey(entityId: string, key: string): Promise<FirstRequest | undefined> {
    const first = await holdWhileInFlight(
      () => paymentsRepo.getByKey(this.db, entityId, key),
      (p) => p.processing,
      this.config,
    );
    return first && { id: first.id, fingerprint: first.request_fingerprint ?? null };
  }

  /**
   * The payment's capture mode: the body's, else its client session's, else MANUAL. A body
   * whose capture_mode contradicts its session's is 400.
   */
  private captureModeOf(body: CreatePaymentBody, s: ClientSessionRow | undefined): 'MANUAL' | 'AUTOMATIC' {
    if (!s) return body.capture_mode ?? 'MANUAL';
    if (body.capture_mode && body.capture_mode !== s.capture_mode) {
      throw problems.invalidField('capture_mode', `the client session's capture_mode is ${s.capture_mode}`);
    }
    return s.capture_mode as 'MANUAL' | 'AUTOMATIC';
  }

  /** The 409 for a key another request used first, once that request has ended (or the hold is over). */
  private async replayed(entityId: string, key: string, instance: string): Promise<never> {
    await this.refuseReplay(entityId, key, instance);
    throw problems.conflict('Idempotency key already used.');
  }

  /**
   * Writes the new payment; with a client session, in one transaction that first claims
   * the session under its row lock (claimSession) and, once the payment is written, marks
   * it SUBMITTED with this payment. A falsy write (the key was taken) leaves the session as it was.
   */
  private async claimingSession<T>(entityId: string, body: CreatePaymentBody, paymentId: string, write: (q: Queryable) => Promise<T>): Promise<T> {
    if (!body.client_session_id) return write(this.db);
    const sessionId = body.client_session_id;
    return this.db.transaction(async (tx) => {
      await this.claimSession(tx, entityId, body);
      const written = await write(tx);
      if (written) await clientSessionsRepo.setStatus(tx, sessionId, 'SUBMITTED', paymentId);
      return written;
    });
  }

  private async claimSession(tx: Queryable, entityId: string, body: CreatePaymentBody): Promise<void> {
    const s = await clientSessionsRepo.get(tx, entityId, body.client_session_id!, true);
    if (!s) throw problems.notFoundNoBody();
    const refusal = ClientSessionsService.paymentRefusal(s, await clientSessionsRepo.attempts(tx, s.id), this.config.sessionMaxAttempts, (this.config.clock ?? systemClock)());
    if (refusal) throw problems.invalidField('client_session_id', refusal);
    if (s.amount !== body.amount || s.currency !== body.currency) {
      throw problems.invalidField('client_session_id', `the client session is for ${s.amount} ${s.currency}`);
    }
  }

  // ---- settling ----

  /**
   * Asks partners about PENDING transactions and records their answers, then finalizes
   * the payment (an operation whose children are all settled gets its final status and
   * event, even when nothing was PENDING any more). With recover, a transaction the
   * partner never received is given up (authorizations, once the call's own deadline
   * has surely passed) or sent again with the same key (operations: the merchant's
   * request then completes at most once). renew: called before each partner call
   * (recovery renews its claim on the payment there); false stops the pass. ledger: the
   * payment's rows when the caller read them with it (else read here). Returns whether
   * there was anything to settle (false: the payment is as read).
   */
  async settle(p: PaymentRow, { recover, renew }: { recover: boolean; renew?: () => Promise<boolean> },
    ledger?: { txs: PartnerTxRow[]; ops: OperationRow[] }): Promise<boolean> {
    const { txs: all, ops } = ledger ?? await paymentsRepo.ledger(this.db, p.id);
    const pending = all.filter((t) => t.status === 'PENDING');
    const openOps = ops.some((o) => o.status === 'PENDING');
    if (pending.length === 0 && !openOps && !(recover && p.processing)) return false;
    for (const t of pending) {
      if (renew && !(await renew())) return true;
      await this.settleTx(p, t, all, recover);
    }
    faultPoint('recovery:after-partner');
    await this.finalize(p.entity_id, p.id, { endProcessing: recover, recover });
    return true;
  }

  /**
   * The 3-D Secure challenges of a payment that the shopper left for longer than
   * `expirySeconds` at `now` (recovery, under its claim; renew before each partner call).
   * Each is first asked about (the shopper may have finished it without coming back:
   * that outcome is recorded as if they had). One still awaiting the shopper is
   * cancelled at the partner through the port, a void of the authorization with a key
   * of its own (`challenge-expiry:<transaction id>`, so a retry or another worker asks
   * once), and once the partner confirms it holds nothing, the authorization is closed
   * as ERROR with status_code CHALLENGE_EXPIRED; the payment is then finalized as for
   * any other answer (its status, the payment.failed event, the reversal of other parts
   * of a split). A partner that does not confirm leaves the challenge PENDING for the
   * next pass. Returns whether anything was settled.
   */
  async expireChallenges(p: PaymentRow, { now, expirySeconds, renew }: { now: number; expirySeconds: number; renew?: () => Promise<boolean> }): Promise<boolean> {
    const all = await paymentsRepo.txs(this.db, p.id);
    const left = all.filter((t) => t.kind === 'AUTHORIZATION' && t.status === 'PENDING' && t.redirection
      && now - new Date(t.created_at).getTime() > expirySeconds * 1000);
    let settled = false;
    for (const t of left) {
      if (renew && !(await renew())) break;
      const update = await this.expireChallenge(p, t, expirySeconds);
      if (update && await moneyWriter.record(this.db, { shape: 'answer', tx: t, parents: [], update })) settled = true;
    }
    if (settled) await this.finalize(p.entity_id, p.id, { endProcessing: true, recover: true });
    return settled;
  }

  /** What to record for one abandoned challenge, or undefined: leave it PENDING (the partner did not confirm). */
  private async expireChallenge(p: PaymentRow, t: PartnerTxRow, expirySeconds: number): Promise<TxUpdate | undefined> {
    const connector = this.partners.get(t.partner);
    if (!connector) return undefined;
    const label = (call: string) => ({ telemetry: this.config.telemetry, partner: t.partner, call, key: t.partner_key });
    const context = { amount: t.amount, currency: p.currency, sent_at: new Date(t.created_at) };
    // The partner's view: its answer, NOT_FOUND (it holds nothing), or undefined (no answer in time).
    const sync = async () => {
      let notFound = false;
      const r = await callPartner(async () => {
        const x = await connector.sync({ key: t.partner_key, entityId: p.entity_id, kind: 'AUTHORIZATION', context });
        if (x !== 'NOT_FOUND') return x;
        notFound = true;
        return { outcome: 'PENDING' as const, partner_status: 'NOT_FOUND', status_code: 'NOT_FOUND' };
      }, this.config.partnerTimeoutMs, undefined, label('sync'));
      return notFound ? 'NOT_FOUND' as const : r;
    };
    const before = await sync();
    if (before === 'NOT_FOUND') return expired(expirySeconds);
    if (before && before.outcome !== 'PENDING') return txUpdate(t.kind, before);
    const cancelled = await callPartner(() => connector.void({
      key: `challenge-expiry:${t.id}`, entityId: p.entity_id, authorization_reference: t.partner_reference ?? '', amount: t.amount, currency: p.currency,
    }), this.config.partnerTimeoutMs, undefined, label('void'));
    if (cancelled?.outcome === 'SUCCESS') return expired(expirySeconds);
    // Not cancelled: the challenge may have ended meanwhile (the shopper finished it);
    // what the partner holds now is recorded, or nothing when it still waits.
    const after = await sync();
    if (after === 'NOT_FOUND') return expired(expirySeconds);
    if (!after || after.outcome === 'PENDING') return undefined;
    return txUpdate(t.kind, after);
  }

  /** True when the partner call made when this transaction was recorded has surely given up. */
  private pastDeadline(t: PartnerTxRow): boolean {
    return Date.now() - new Date(t.created_at).getTime() > this.config.partnerTimeoutMs + DEADLINE_MARGIN_MS;
  }

  private async settleTx(p: PaymentRow, t: PartnerTxRow, all: PartnerTxRow[], recover: boolean): Promise<void> {
    const connector = this.partners.get(t.partner);
    if (!connector) return;
    const late = (r: PartnerResult) => this.answeredLate(p.entity_id, p.id, t, all, r);
    const parentRef = all.find((x) => x.id === t.parent_id)?.partner_reference ?? undefined;
    const context = { amount: t.amount, currency: p.currency, sent_at: new Date(t.created_at), ...(parentRef ? { authorization_reference: parentRef } : {}) };
    const synced = await callPartner(async () => {
      const r = await connector.sync({ key: t.partner_key, entityId: p.entity_id, kind: t.kind, context });
      if (r !== 'NOT_FOUND') return r;
      // The original call may still be on its way to the partner until its deadline.
      if (!recover || !this.pastDeadline(t)) throw new NotSettled('not received yet');
      if (t.kind === 'AUTHORIZATION') {
        return { outcome: 'ERROR' as const, partner_status: 'NOT_RECEIVED', status_code: 'NOT_RECEIVED', partner_status_description: 'The partner never received the authorization' };
      }
      const parent = all.find((x) => x.id === t.parent_id);
      const req = { key: t.partner_key, entityId: p.entity_id, authorization_reference: parent?.partner_reference ?? '', amount: t.amount, currency: p.currency };
      const send = t.kind === 'CAPTURE' ? connector.capture(req) : t.kind === 'REFUND' ? connector.refund(req) : connector.void(req);
      // A resend answered after our deadline is recorded all the same.
      return callPartner(() => send, this.config.partnerTimeoutMs, late, { telemetry: this.config.telemetry, partner: t.partner, call: t.kind.toLowerCase(), key: t.partner_key })
        .then((r) => r ?? Promise.reject(new NotSettled('no answer in time')));
    }, recover ? this.config.partnerTimeoutMs * 2 : this.config.partnerTimeoutMs, undefined, // (a sync, then maybe a resend)
    { telemetry: this.config.telemetry, partner: t.partner, call: 'sync', key: t.partner_key });
    const update = txUpdate(t.kind, synced);
    if (update) await this.db.onRow(p.id, () => moneyWriter.record(this.db, { shape: 'answer', tx: t, parents: all, update }));
  }

  /**
   * A partner's notification about one of payd's calls (POST /partners/{name}/webhooks):
   * applied as an answer that came late (answeredLate): a PENDING transaction takes it,
   * one already settled keeps what it has. Returns how many transactions it named.
   */
  async notified(partner: string, n: PartnerNotification): Promise<number> {
    const targets = n.key
      ? [await paymentsRepo.txByPartnerKey(this.db, partner, n.key)].filter((x) => x !== undefined)
      : n.kind === 'CAPTURE' && n.authorization_reference ? await paymentsRepo.pendingCapturesOf(this.db, partner, n.authorization_reference) : [];
    for (const t of targets) {
      if (n.kind && n.kind !== t.kind && !(n.kind === 'REFUND' && t.kind === 'VOID')) continue;
      await this.answeredLate(t.entity_id, t.payment_id, t, t.parent ? [t.parent] : [], n.result);
    }
    return targets.length;
  }

  /**
   * A partner answer that came after payd stopped waiting for it. A transaction still
   * PENDING takes it (and the payment is finalized). An authorization already closed as
   * ERROR or REFUSED that the partner approved after all is recorded and reversed at the
   * partner (a SYSTEM void), so that the shopper's money is not left held. An answer met
   * by a database outage (a failover under way) is applied once the database takes writes
   * again, for up to LATE_ANSWER_RETRY_MS: nothing else would ever apply it (recovery does
   * not look at an authorization it closed). Each step is idempotent, so a retry after a
   * partial attempt does nothing twice.
   */
  async answeredLate(entityId: string, paymentId: string, t: CountedRow, parents: readonly ParentRow[], result: PartnerResult): Promise<void> {
    const until = Date.now() + LATE_ANSWER_RETRY_MS;
    for (let retry = false; ; retry = true) {
      try {
        await this.applyLateAnswer(entityId, paymentId, t, parents, result, retry);
        return;
      } catch (err) {
        // Best effort beyond that: a reversal recorded but not sent stays PENDING for recovery to send.
        if (!isConnectionFailure(err) || Date.now() >= until) return;
        await new Promise((r) => setTimeout(r, LATE_ANSWER_RETRY_INTERVAL_MS).unref());
      }
    }
  }

  private async applyLateAnswer(entityId: string, paymentId: string, t: CountedRow, parents: readonly ParentRow[], result: PartnerResult, retry: boolean): Promise<void> {
    const update = txUpdate(t.kind, result);
    if (!update || update.status === 'PENDING') return;
    const settled = await this.db.onRow(paymentId, () => moneyWriter.record(this.db, { shape: 'answer', tx: t, parents, update }));
    // A retry finalizes in any case: the attempt before may have settled the transaction
    // and failed before finalizing (finalize changes nothing when nothing is due).
    if (settled || retry) await this.finalize(entityId, paymentId, { endProcessing: false, recover: false });
    if (settled) return;
    if (t.kind !== 'AUTHORIZATION' || update.status !== 'AUTHORIZED') return;
    const auth = (await paymentsRepo.txs(this.db, paymentId)).find((x) => x.id === t.id);
    if (!auth || (auth.status !== 'ERROR' && auth.status !== 'REFUSED')) return;
    await this.reverse(entityId, paymentId, [{ ...auth, partner_reference: update.partner_reference ?? null }], {
      key: `late-reversal:${t.id}`,
      reason: 'Reversal of an authorization the partner approved after payd had closed it',
      before: async (tx) => (await moneyWriter.record(tx, { shape: 'late answer', txId: t.id, update })) !== undefined,
    });
  }

  /**
   * Recomputes the payment from its ledger under the row lock: authorization status,
   * operation statuses, reversal of a split that could not be fully authorized, and
   * the automatic capture.
   */
  async finalize(entityId: string, id: string, opts: { endProcessing: boolean; recover: boolean }): Promise<PaymentViewT | undefined> {
    let toReverse: Array<{ txId: string; key: string; auth: PartnerTxRow }> = [];
    let capture = 0;
    let ended: OperationRow[] = [];
    const view = await this.db.onRow(id, () => this.db.transaction(async (tx) => {
      toReverse = [];
      ended = []; // (a retried transaction starts again)
      const p = await paymentsRepo.get(tx, entityId, id, true);
      if (!p) return undefined;
      const { txs, ops } = await paymentsRepo.ledger(tx, id);
      const outcome = outcomeOf(p, txs, ops, { endProcessing: opts.endProcessing, capturesOnce: this.capturesOnce });
      let version = p.version;
      // The reversal is recorded in this transaction, with the status that calls for it:
      // a crash before the partners are called leaves PENDING voids that recovery sends,
      // never a failed payment whose other parts stay held. (Its reservation moves the version.)
      const r = outcome.reverse.length ? await this.reserveReversal(tx, p, outcome.reverse, DEFAULT_REVERSAL(id), txs) : undefined;
      if (r) {
        toReverse = r.children;
        ops.push(r.op);
        txs.push(...r.rows);
        version += 1;
      }
      const at = new Date();
      for (const { op, status } of outcome.operations) {
        op.status = status;
        op.updated_at = at;
        ended.push(op);
      }
      // The release a capture-once partner made with a partial capture is written with the
      // conclusion that sees it (the capture's, commonly), so that no crash separates the
      // capture's success from it. (Its statement moves the version.)
      let release: ReleaseRecord | undefined;
      const events = [...outcome.events];
      if (outcome.release) {
        const { op, rows } = releaseRows(p, outcome.release, txs, at);
        release = { payment: { ...p, version }, op, txs: rows, parents: outcome.release.parts.map((x) => x.auth) };
        ops.push(op);
        txs.push(...rows);
        events.push({ type: operationEventType(op)!, operationId: op.id });
        ended.push(op);
        version += 1;
      }
      const changed = outcome.changed || outcome.operations.length > 0 || release !== undefined;
      if (changed) version += 1;
      capture = outcome.capture;
      // The payment as this transaction leaves it.
      const view = paymentView({ ...p, authorization_status: outcome.status, version }, txs, ops, this.config.baseUrl);
      if (changed) {
        await moneyWriter.conclude(tx, {
          shape: 'locked', paymentId: id, status: outcome.status, endProcessing: opts.endProcessing, at,
          operations: outcome.operations.map((o) => ({ id: o.op.id, status: o.status })), release, events: await paymentEvents(tx, p, view, events),
        });
      }
      return view;
    }));
    for (const o of ended) this.config.telemetry?.operationEnded(o.kind, o.status);
    if (toReverse.length) {
      faultPoint('reversal:before-send'); // the failure and its reversal are committed; no partner called yet
      await this.sendReversal(entityId, id, toReverse);
    }
    if (capture && this.steps) await this.steps.authorized(entityId, id, capture);
    // After a reversal or an automatic capture the payment changed again: callers re-read it.
    return toReverse.length || capture ? undefined : view;
  }

  /**
   * Voids the authorized parts of a split whose other parts failed (triggered_by SYSTEM),
   * or (opts) an authorization the partner approved after payd closed it; opts.before
   * runs first in the same transaction, under the row lock (false: nothing to reverse).
   */
  private async reverse(entityId: string, id: string, auths: PartnerTxRow[],
    opts: ReversalOptions = DEFAULT_REVERSAL(id)): Promise<void> {
    const reserved = await this.db.onRow(id, () => this.db.transaction(async (tx) => {
      const p = await paymentsRepo.get(tx, entityId, id, true);
      if (!p) return undefined;
      return this.reserveReversal(tx, p, auths, opts, await paymentsRepo.txs(tx, id));
    }));
    if (reserved) await this.sendReversal(entityId, id, reserved.children);
  }

  /**
   * Under the payment's row lock (tx; `ledger`, its rows as read under it): reserves the
   * VOID operation that reverses `auths` with its PENDING rows, before any partner is
   * called (write-ahead: a crash after this commit leaves PENDING rows that recovery
   * sends); the reservation moves the payment's version. undefined when every one is
   * reversed already (several readers may notice the failure at once: only the first
   * finds them unreversed), opts.before declines, or the key is taken.
   */
  private async reserveReversal(tx: Queryable, p: PaymentRow, auths: PartnerTxRow[], opts: ReversalOptions, ledger: PartnerTxRow[]):
  Promise<{ op: OperationRow; rows: PartnerTxRow[]; children: Array<{ txId: string; key: string; auth: PartnerTxRow }> } | undefined> {
    const reversed = new Set(ledger.filter((t) => t.kind === 'VOID').map((t) => t.parent_id));
    auths = auths.filter((a) => !reversed.has(a.id));
    if (auths.length === 0) return undefined;
    if (opts.before && !(await opts.before(tx))) return undefined;
    const opId = randomUUID();
    let seq = ledger.reduce((m, t) => Math.max(m, t.seq), 0) + 1;
    const newOp = {
      id: opId, payment_id: p.id, kind: 'VOID' as const, amount: auths.reduce((s, a) => s + a.amount, 0), status: 'PENDING' as const,
      triggered_by: 'SYSTEM' as const, merchant_reference: null, reason: opts.reason, idempotency_key: opts.key, request_fingerprint: null,
    };
    const pending: NewPartnerTx[] = auths.map((a, i) => ({
      id: randomUUID(), payment_id: p.id, operation_id: opId, parent_id: a.id, kind: 'VOID', seq: seq++,
      partner: a.partner, method: a.method, amount: a.amount, status: 'PENDING', partner_key: `${opId}:${i + 1}`, card: null, save_token: null,
    }));
    // (Counted against the authorizations as stored: nothing, for one closed before it answered late.)
    const at = await moneyWriter.reserve(tx, { shape: 'operation', op: newOp, rows: pending, parents: ledger });
    if (!at) return undefined;
    const op: OperationRow = { ...newOp, created_at: at, updated_at: at };
    return {
      op,
      rows: pending.map((r) => newTxRow(r, at, at)),
      children: pending.map((r, i) => ({ txId: r.id, key: r.partner_key, auth: auths[i]! })),
    };
  }

  /** Calls the partners for a reversal already recorded (reserveReversal), then finalizes the payment. */
  private async sendReversal(entityId: string, id: string, children: Array<{ txId: string; key: string; auth: PartnerTxRow }>): Promise<void> {
    const currency = (await paymentsRepo.get(this.db, entityId, id))?.currency ?? '';
    for (const c of children) {
      const connector = this.partners.get(c.auth.partner)!;
      // The void as reserved, counted against its authorization as stored.
      const row: CountedRow = { id: c.txId, kind: 'VOID', status: 'PENDING', amount: c.auth.amount, parent_id: c.auth.id };
      const result = await callPartner(() => connector.void({
        key: c.key, entityId, authorization_reference: c.auth.partner_reference ?? '', amount: c.auth.amount, currency,
      }), this.config.partnerTimeoutMs, (r) => void this.answeredLate(entityId, id, row, [c.auth], r),
      { telemetry: this.config.telemetry, partner: c.auth.partner, call: 'void', key: c.key });
      const update = txUpdate('VOID', result);
      if (update) await this.db.onRow(id, () => moneyWriter.record(this.db, { shape: 'answer', tx: row, parents: [c.auth], update }));
    }
    await this.finalize(entityId, id, { endProcessing: false, recover: false });
  }
}
