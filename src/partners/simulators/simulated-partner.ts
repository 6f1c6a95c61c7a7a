// Common behaviour of the built-in simulated partners: each keeps its own ledger keyed
// by the idempotency key payd sends (a retry returns the first answer), guards amounts
// like a real acquirer, and can play timeouts whose outcome sync reveals later.
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Db, Queryable } from '../../platform/db/index.ts';
import { type Clock, systemClock } from '../../platform/clock.ts';
import {
  type AuthorizeRequest,
  type FollowUpRequest,
  type PartnerConnector,
  type PartnerNotification,
  type PartnerOutcome,
  type PartnerResult,
  PartnerTimeout,
  type SyncRequest,
} from '../port.ts';
import type { InlineCall, InlinePartner } from '../inline.ts';
import { type SimOperation, simRepo } from './ledger.repo.ts';

/** What the simulator decided for an authorization. */
export interface Decision {
  status: 'AUTHORIZED' | 'REFUSED' | 'ERROR' | 'CHALLENGE_REQUIRED';
  code: string;
  description: string;
  /** Behaviour flags kept with the authorization (e.g. fail_capture). */
  flags?: Record<string, boolean>;
  /** Extra data echoed in results (e.g. card details). */
  data?: Record<string, unknown>;
  /** The partner processes the call but the answer is lost: payd sees a timeout. */
  timeout?: boolean;
}

export interface SimOptions {
  /** Public base URL of payd, for challenge pages. */
  baseUrl: string;
  /** How long a simulated timeout stays unresolved before sync reveals the outcome. */
  timeoutResolveMs?: number;
  /** Network latency before the partner receives each authorize/capture/refund/void call. */
  latencyMs?: number;
  /**
   * Answer pure decisions inline (default true; never with a latency): an authorization
   * decided by the card number or the amount alone, and the captures, refunds and voids
   * of such an authorization, are answered without a record of the simulator's own. The
   * authorization's reference then carries what the simulator needs later (amount,
   * currency, behaviour flags). false: every call is recorded in the simulator's ledger,
   * like a partner across the network.
   */
  inline?: boolean;
  /**
   * Signs and verifies the simulators' notifications (POST /partners/{name}/webhooks with
   * Sim-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">). payd derives it from
   * its master key. Absent: every notification is refused as unverified.
   */
  notificationSecret?: string;
  /** The simulator's time (delayed outcomes, notification signatures); default the system clock. */
  clock?: Clock;
}

/** How old a simulator notification's signature may be (Stripe's and Adyen's tolerance). */
const NOTIFICATION_TOLERANCE_S = 300;

/** The reference of an authorization answered inline: ia:<uuid>:<amount>:<currency>:<flag,flag>. */
function inlineReference(amount: number, currency: string, flags: Record<string, boolean>): string {
  return `ia:${randomUUID()}:${amount}:${currency}:${Object.keys(flags).filter((f) => flags[f]).join(',')}`;
}

/** The authorization an inline reference stands for, as the simulator's ledger would hold it. */
export function parseInlineReference(partner: string, reference: string): SimOperation | undefined {
  const m = /^ia:([0-9a-f-]{36}):(\d+):([A-Z]{3}):([a-z_,]*)$/.exec(reference);
  if (!m) return undefined;
  const flags = Object.fromEntries(m[4]!.split(',').filter(Boolean).map((f) => [f, true]));
  return {
    partner, key: '', kind: 'AUTHORIZATION', reference, parent_ref: null, amount: Number(m[2]),
    status: 'AUTHORIZED', data: { flags, currency: m[3] }, resolve_at: null,
  };
}

/**
 * What a capture, refund or void of an authorization answers, from the room left on it
 * and the authorization's behaviour flags (fail_<kind>, timeout_<kind>): the same for
 * a recorded call and an inline one. timeout: the answer the partner settles on later.
 */
function followUpAnswer(kind: 'CAPTURE' | 'REFUND' | 'VOID', amount: number, room: number, flags: Record<string, boolean>):
  { status: 'REFUSED' | 'SUCCEEDED'; data: { code: string; description: string }; timeout?: true } {
  const k = kind.toLowerCase();
  if (amount > room) return { status: 'REFUSED', data: { code: 'AMOUNT_NOT_AVAILABLE', description: `Only ${room} is available to ${k}` } };
  if (flags[`fail_${k}`]) return { status: 'REFUSED', data: { code: 'DECLINED', description: `The issuer declined the ${k}` } };
  const data = { code: 'SUCCEEDED', description: 'Approved' };
  return flags[`timeout_${k}`] ? { status: 'SUCCEEDED', data, timeout: true } : { status: 'SUCCEEDED', data };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The refusal of a call on an authorization the partner does not hold (as sim_follow_up, migration 0030). */
const NO_AUTHORIZATION = { code: 'NO_AUTHORIZATION', description: 'No authorization with this reference' };

const OUTCOME: Record<string, PartnerOutcome> = {
  AUTHORIZED: 'SUCCESS',
  SUCCEEDED: 'SUCCESS',
  REFUSED: 'REFUSED',
  ERROR: 'ERROR',
  // A challenge cancelled before the cardholder completed it (a void of it, cancelChallenge).
  EXPIRED: 'ERROR',
};

export abstract class SimulatedPartner implements PartnerConnector, InlinePartner {
  abstract readonly name: string;
  abstract readonly methods: readonly string[];
  abstract readonly limits: PartnerConnector['limits'];

  constructor(
    protected readonly db: Db,
    protected readonly options: SimOptions,
  ) {
    this.now = options.clock ?? systemClock;
  }

  protected readonly now: Clock;

  protected abstract decide(req: AuthorizeRequest, tx: Queryable): Promise<Decision>;

  /** The decision when it reads no state (card acquirer, BNPL): enables inline answers. */
  protected decideNow?(req: AuthorizeRequest): Decision;

  answerInline(call: InlineCall): PartnerResult | undefined {
    if (this.options.inline === false || this.options.latencyMs) return undefined;
    if (call.kind === 'AUTHORIZATION') {
      if (!this.decideNow) return undefined;
      // A card to keep, or a kept card, is held by the partner: never a pure decision.
      if (call.request.save_token || call.request.instrument.type === 'SAVED_CARD') return undefined;
      const d = this.decideNow(call.request);
      if (d.timeout || d.status === 'CHALLENGE_REQUIRED') return undefined; // these need the simulator's own record
      const op = this.newAuthorization(call.request, d);
      return this.result({ ...op, reference: d.status === 'AUTHORIZED' ? inlineReference(call.request.amount, call.request.currency, d.flags ?? {}) : op.reference });
    }
    const parent = parseInlineReference(this.name, call.request.authorization_reference);
    if (!parent) return undefined;
    const op = (status: string, data: Record<string, unknown>) => ({
      partner: this.name, key: call.request.key, kind: call.kind, reference: randomUUID(), parent_ref: parent.reference, amount: call.request.amount,
      status, data, resolve_at: null,
    });
    if (call.request.currency !== parent.data.currency) {
      return this.result(op('REFUSED', { code: 'AMOUNT_NOT_AVAILABLE', description: `The authorization is in ${String(parent.data.currency)}` }));
    }
    const answer = followUpAnswer(call.kind, call.request.amount, parent.amount, parent.data.flags as Record<string, boolean>);
    return answer.timeout ? undefined : this.result(op(answer.status, answer.data)); // a timeout needs the simulator's own record
  }

  /**
   * True when decide() reads no state and onSettled() moves none (the card acquirer,
   * BNPL): an authorization is then one INSERT, and only a retried key takes the
   * transaction that reads the first answer back.
   */
  protected readonly stateless: boolean = false;

  /** Hook for partners that move balances (gift cards). */
  protected async onSettled(_tx: Queryable, _op: SimOperation, _parent: SimOperation | undefined): Promise<void> {}

  protected result(op: SimOperation): PartnerResult {
    const data = op.data as { code?: string; description?: string; card?: PartnerResult['card']; save_token?: boolean };
    const challenge = op.status === 'CHALLENGE_REQUIRED';
    return {
      outcome: OUTCOME[op.status] ?? 'PENDING',
      partner_reference: op.reference,
      partner_status: op.status,
      ...(data.description ? { partner_status_description: data.description } : {}),
      status_code: data.code ?? (op.status === 'SUCCEEDED' || op.status === 'AUTHORIZED' ? 'SUCCEEDED' : op.status),
      ...(data.card ? { card: data.card } : {}),
      ...(data.save_token ? { token_saved: op.status === 'AUTHORIZED' } : {}),
      ...(challenge ? { redirection: { url: `${this.options.baseUrl}/sim/acs/${op.reference}`, method: 'GET' as const } } : {}),
    };
  }

  /** A timed-out operation resolves once its time has come (the partner did process it). */
  private async resolved(tx: Queryable, op: SimOperation): Promise<SimOperation> {
    if (op.status !== 'PROCESSING' || !op.resolve_at || op.resolve_at.getTime() > this.now()) return op;
    const final = String(op.data.final ?? 'ERROR');
    // Two callers may resolve it at once: only the one whose update applies moves balances.
    if (!(await simRepo.resolveProcessing(tx, this.name, op.reference, final))) {
      return (await simRepo.byKey(tx, this.name, op.key)) ?? op;
    }
    const updated = { ...op, status: final, resolve_at: null };
    if (final === 'SUCCEEDED' || final === 'AUTHORIZED') {
      const parent = op.parent_ref ? await simRepo.byReference(tx, this.name, op.parent_ref) : undefined;
      await this.onSettled(tx, updated, parent);
    }
    return updated;
  }

  private pendingTimeout(final: string, data: Record<string, unknown>): Pick<SimOperation, 'status' | 'data' | 'resolve_at'> {
    return {
      status: 'PROCESSING',
      data: { ...data, final },
      resolve_at: new Date(this.now() + (this.options.timeoutResolveMs ?? 1000)),
    };
  }

  async authorize(req: AuthorizeRequest): Promise<PartnerResult> {
    if (this.options.latencyMs) await sleep(this.options.latencyMs);
    let timedOut = false;
    if (this.stateless) {
      const d = await this.decide(req, this.db);
      const stored = await simRepo.insertNew(this.db, this.newAuthorization(req, d));
      if (stored) {
        if (d.timeout) throw new PartnerTimeout(`${this.name} did not answer the authorization in time`);
        return this.result(stored);
      }
    }
    const result = await this.db.transaction(async (tx) => {
      const existing = await simRepo.byKey(tx, this.name, req.key);
      if (existing) return this.result(await this.resolved(tx, existing));
      const d = await this.decide(req, tx);
      // Like a real partner, only the call that wins the key acts; a concurrent call with
      // the same key (it lost the insert race) answers what the winner recorded.
      const stored = await simRepo.insertNew(tx, this.newAuthorization(req, d));
      if (!stored) return this.result(await this.resolved(tx, (await simRepo.byKey(tx, this.name, req.key))!));
      if (stored.status === 'AUTHORIZED') await this.onSettled(tx, stored, undefined);
      timedOut = Boolean(d.timeout);
      return this.result(stored);
    });
    if (timedOut) throw new PartnerTimeout(`${this.name} did not answer the authorization in time`);
    return result;
  }

  private newAuthorization(req: AuthorizeRequest, d: Decision): SimOperation {
    // A card saved for future use (card on file) is kept only once the authorization succeeds.
    const data = { code: d.code, description: d.description, flags: d.flags ?? {}, currency: req.currency, ...(req.save_token && req.method === 'CARD' ? { save_token: true } : {}), ...d.data };
    const base = { partner: this.name, key: req.key, kind: 'AUTHORIZATION', reference: randomUUID(), parent_ref: null, amount: req.amount };
    if (d.status === 'CHALLENGE_REQUIRED' && req.return_url) Object.assign(data, { return_url: req.return_url });
    // The cardholder's language for the challenge page, as an issuer has it (the merchant's customer.locale).
    if (d.status === 'CHALLENGE_REQUIRED' && typeof req.customer?.locale === 'string') Object.assign(data, { locale: req.customer.locale });
    return d.timeout ? { ...base, ...this.pendingTimeout(d.status, data) } : Object.assign(base, { status: d.status, data, resolve_at: null });
  }

  /** What the simulated ACS page shows for an authorization awaiting its challenge. */
  async challenge(reference: string): Promise<{ status: string; amount: number; currency: string; return_url?: string; locale?: string } | undefined> {
    const op = await simRepo.byReference(this.db, this.name, reference);
    if (!op || op.kind !== 'AUTHORIZATION') return undefined;
    return {
      status: op.status, amount: op.amount, currency: String(op.data.currency ?? ''),
      ...(typeof op.data.return_url === 'string' ? { return_url: op.data.return_url } : {}),
      ...(typeof op.data.locale === 'string' ? { locale: op.data.locale } : {}),
    };
  }

  /** A capture, refund or void as first received, before its answer is decided. */
  private followUpBase(kind: 'CAPTURE' | 'REFUND' | 'VOID', req: FollowUpRequest) {
    return { partner: this.name, key: req.key, kind, reference: randomUUID(), parent_ref: req.authorization_reference, amount: req.amount, resolve_at: null };
  }

  /** The operation recorded for an answer: PROCESSING, to settle later, when it times out. */
  private decided(base: ReturnType<SimulatedPartner['followUpBase']>, answer: ReturnType<typeof followUpAnswer>): SimOperation {
    return answer.timeout ? { ...base, ...this.pendingTimeout(answer.status, answer.data) } : { ...base, status: answer.status, data: answer.data };
  }

  /** The operation inserted, or, when its key was used, what the first call with it recorded. */
  private async insertOrRecorded(q: Queryable, op: SimOperation): Promise<SimOperation> {
    return (await simRepo.insertNew(q, op)) ?? (await simRepo.byKey(q, this.name, op.key))!;
  }

  /**
   * A capture, refund or void. The first call with a key decides; a later one answers
   * what the first recorded (settled, if its time has come). The room left on a recorded
   * authorization is checked under its lock by sim_follow_up (simRepo.followUp,
   * migration 0030), for every simulator: the one place of that rule.
   */
  private async followUp(kind: 'CAPTURE' | 'REFUND' | 'VOID', req: FollowUpRequest): Promise<PartnerResult> {
    if (this.options.latencyMs) await sleep(this.options.latencyMs);
    const base = this.followUpBase(kind, req);
    const op = this.stateless
      ? await this.statelessFollowUp(kind, req, base)
      : await this.db.transaction((tx) => this.balanceFollowUp(tx, kind, req, base));
    if (op.reference === base.reference && op.status === 'PROCESSING') {
      throw new PartnerTimeout(`${this.name} did not answer the ${kind.toLowerCase()} in time`);
    }
    return this.result(op);
  }

  /**
   * A follow-up of a partner that moves balances (the gift card), in one transaction
   * under the authorization's lock, so that the balance moves with the record. Partners
   * that read no state (the only ones that answer inline, so the only ones with inline
   * authorizations) take statelessFollowUp.
   */
  private async balanceFollowUp(tx: Queryable, kind: 'CAPTURE' | 'REFUND' | 'VOID', req: FollowUpRequest,
    base: ReturnType<SimulatedPartner['followUpBase']>): Promise<SimOperation> {
    const parent = await simRepo.byReference(tx, this.name, req.authorization_reference, true);
    let op: SimOperation;
    if (kind === 'VOID' && parent?.status === 'CHALLENGE_REQUIRED') {
      op = await this.cancelChallenge(tx, parent, base);
    } else if (!parent || parent.status !== 'AUTHORIZED') {
      op = await this.insertOrRecorded(tx, { ...base, status: 'REFUSED', data: NO_AUTHORIZATION });
    } else {
      op = await simRepo.followUp(tx, this.decided(base, followUpAnswer(kind, req.amount, Number.POSITIVE_INFINITY, (parent.data.flags ?? {}) as Record<string, boolean>)));
      // Only the call that wins the key moves a balance (see authorize).
      if (op.reference === base.reference && op.status === 'SUCCEEDED') await this.onSettled(tx, op, parent);
    }
    return op.reference === base.reference ? op : this.resolved(tx, op);
  }

  /**
   * A follow-up of a partner that moves no balance (stateless): the authorization read
   * unlocked (once AUTHORIZED, its amount and flags do not change), then one call that
   * checks the room left under the authorization's lock and records the answer: two round
   * trips instead of a transaction of five. An authorization answered inline has no
   * record here: its own amount bounds the call (payd's ledger guards the running
   * totals), and the answer is one insert.
   */
  private async statelessFollowUp(kind: 'CAPTURE' | 'REFUND' | 'VOID', req: FollowUpRequest,
    base: ReturnType<SimulatedPartner['followUpBase']>): Promise<SimOperation> {
    const inlineParent = parseInlineReference(this.name, req.authorization_reference);
    const parent = inlineParent ?? await simRepo.byReference(this.db, this.name, req.authorization_reference);
    let op: SimOperation;
    const challenge = kind === 'VOID' && parent?.status === 'CHALLENGE_REQUIRED'
      ? await this.db.transaction(async (tx) => {
        const locked = await simRepo.byReference(tx, this.name, req.authorization_reference, true);
        return locked?.status === 'CHALLENGE_REQUIRED' ? this.cancelChallenge(tx, locked, base) : undefined;
      })
      : undefined;
    if (challenge) {
      op = challenge;
    } else if (!parent || parent.status !== 'AUTHORIZED') {
      op = await this.insertOrRecorded(this.db, { ...base, status: 'REFUSED', data: NO_AUTHORIZATION });
    } else {
      const room = inlineParent ? parent.amount : Number.POSITIVE_INFINITY;
      const decided = this.decided(base, followUpAnswer(kind, req.amount, room, (parent.data.flags ?? {}) as Record<string, boolean>));
      op = inlineParent ? await this.insertOrRecorded(this.db, decided) : await simRepo.followUp(this.db, decided);
    }
    return op.reference === base.reference ? op : this.resolved(this.db, op);
  }

  /**
   * A void of an authorization still awaiting its 3-D Secure challenge (payd gave up
   * waiting for the shopper, PaymentsService.expireChallenges): the challenge is
   * cancelled (EXPIRED: the ACS page then says so and completes nothing) and the void
   * succeeds, holding nothing. Under the authorization's lock (tx), so that the shopper
   * completing the challenge at the same moment either wins (the void then voids an
   * authorization) or finds it cancelled.
   */
  private async cancelChallenge(tx: Queryable, parent: SimOperation, base: ReturnType<SimulatedPartner['followUpBase']>): Promise<SimOperation> {
    const recorded = await simRepo.byKey(tx, this.name, base.key);
    if (recorded) return recorded;
    await simRepo.setStatus(tx, this.name, parent.reference, 'EXPIRED',
      { code: 'CHALLENGE_EXPIRED', description: 'The 3-D Secure challenge was cancelled before the cardholder completed it' });
    return this.insertOrRecorded(tx, { ...base, status: 'SUCCEEDED', data: { code: 'SUCCEEDED', description: 'The authorization awaiting its challenge was cancelled' } });
  }

  capture(req: FollowUpRequest) {
    return this.followUp('CAPTURE', req);
  }
  refund(req: FollowUpRequest) {
    return this.followUp('REFUND', req);
  }
  void(req: FollowUpRequest) {
    return this.followUp('VOID', req);
  }

  async sync(req: SyncRequest): Promise<PartnerResult | 'NOT_FOUND'> {
    return this.db.transaction(async (tx) => {
      const op = await simRepo.byKey(tx, this.name, req.key);
      return op ? this.result(await this.resolved(tx, op)) : 'NOT_FOUND';
    });
  }

  /** The Sim-Signature header for a notification body, as the simulator sends it. */
  signNotification(body: string, at: Date = new Date(this.now())): string {
    if (!this.options.notificationSecret) throw new Error('the simulators have no notification secret');
    const t = Math.floor(at.getTime() / 1000);
    return `t=${t},v1=${createHmac('sha256', this.options.notificationSecret).update(`${t}.${body}`).digest('hex')}`;
  }

  /**
   * A notification names one of payd's calls by its key ({"key": "..."}); the answer is
   * what the simulator's own ledger holds for it (as a real partner's notification tells
   * the outcome it recorded). A call it never received, or answered inline without a
   * record, gives nothing to apply.
   */
  async notification(rawBody: string, headers: Record<string, string | string[] | undefined>): Promise<PartnerNotification[] | 'UNVERIFIED'> {
    const header = headers['sim-signature'];
    const secret = this.options.notificationSecret;
    if (!secret || typeof header !== 'string') return 'UNVERIFIED';
    const m = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(header);
    if (!m) return 'UNVERIFIED';
    const t = Number(m[1]);
    if (Math.abs(this.now() / 1000 - t) > NOTIFICATION_TOLERANCE_S) return 'UNVERIFIED';
    const expected = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest();
    if (!timingSafeEqual(expected, Buffer.from(m[2]!, 'hex'))) return 'UNVERIFIED';
    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch {
      return [];
    }
    const key = (body as { key?: unknown } | null)?.key;
    if (typeof key !== 'string' || key === '' || key.length > 200) return [];
    return this.db.transaction(async (tx) => {
      const op = await simRepo.byKey(tx, this.name, key);
      if (!op) return [];
      const resolved = await this.resolved(tx, op);
      return [{ key, kind: resolved.kind as PartnerNotification['kind'] & string, result: this.result(resolved) }];
    });
  }

  /** The simulated ACS: the shopper passed or failed the challenge of an authorization. */
  async completeChallenge(reference: string, passed: boolean): Promise<PartnerResult | undefined> {
    return this.db.transaction(async (tx) => {
      const op = await simRepo.byReference(tx, this.name, reference, true);
      if (!op || op.kind !== 'AUTHORIZATION') return undefined;
      if (op.status !== 'CHALLENGE_REQUIRED') return this.result(op);
      const card = op.data.card as Record<string, unknown> | undefined;
      const threeDs = card?.three_ds as Record<string, unknown> | undefined;
      const patch = passed
        ? { code: 'SUCCEEDED', description: 'Approved after 3-D Secure challenge', ...(card ? { card: { ...card, three_ds: { ...threeDs, eci: '05', flow: 'CHALLENGE' } } } : {}) }
        : { code: 'AUTHENTICATION_FAILED', description: 'The cardholder failed 3-D Secure authentication' };
      const status = passed ? 'AUTHORIZED' : 'REFUSED';
      await simRepo.setStatus(tx, this.name, reference, status, patch);
      const updated = { ...op, status, data: { ...op.data, ...patch } };
      if (passed) await this.onSettled(tx, updated, undefined);
      return this.result(updated);
    });
  }
}
