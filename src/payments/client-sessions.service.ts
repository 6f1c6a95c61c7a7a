// Client sessions: what a merchant front office creates so the shopper can pay in the
// browser. The widget credential (widget.data) is derived from the session id with a
// key of payd's (HMAC), so it can be shown on every read and checked without storage.
import { createHmac, hkdfSync, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Db, Queryable } from '../platform/db/index.ts';
import { type Clock, systemClock } from '../platform/clock.ts';
import { problems } from '../platform/http/problem.ts';
import type { EligibilityEngine } from '../eligibility/engine.ts';
import { type ClientSessionRow, type SessionAttempts, type SessionStatus, clientSessionsRepo, SESSION_COLUMNS } from './client-sessions.repo.ts';
import { type Filter, listsRepo, statusFilter } from './lists.repo.ts';
import type { PageRequest } from '../platform/http/lists.ts';

export { SESSION_STATUSES } from './client-sessions.repo.ts';
import type { CreateClientSessionBody } from './client-sessions.schemas.ts';
import { paymentsRepo } from './payments.repo.ts';
import type { AuthorizationStatus } from './common.schemas.ts';

export const DEFAULT_SESSION_TTL_MS = 30 * 60_000;
export const MAX_SESSION_TTL_MS = 24 * 3600_000;

export interface ClientSessionsConfig {
  baseUrl: string;
  widgetKey: Buffer;
  /** Payment attempts a session takes (PAYD_SESSION_MAX_ATTEMPTS). */
  maxAttempts: number;
  /** Decides expiry (default the system clock; tests move it). */
  clock?: Clock;
}

/** Authorization statuses after which a session may take another attempt (nothing is held). */
const RETRYABLE = new Set(['REFUSED', 'ERROR']);

export function widgetKey(masterKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), 'payd widget credential v1', 32));
}

export class ClientSessionsService {
  constructor(
    private readonly db: Db,
    private readonly eligibility: EligibilityEngine,
    private readonly config: ClientSessionsConfig,
  ) {
    this.now = config.clock ?? systemClock;
  }

  /** The time that decides expiry. */
  readonly now: Clock;

  /** The session's status now (CREATED past its expiry reads EXPIRED). */
  status(s: ClientSessionRow): SessionStatus {
    return ClientSessionsService.effectiveStatus(s, this.now());
  }

  get maxAttempts(): number {
    return this.config.maxAttempts;
  }

  private mac(id: string): string {
    return createHmac('sha256', this.config.widgetKey).update(`client-session:${id}`).digest('base64url');
  }

  widgetData(id: string): string {
    return Buffer.from(`${id}.${this.mac(id)}`).toString('base64url');
  }

  /** The session id a widget credential stands for, or undefined when it was not made by payd. */
  verifyWidgetData(data: string): string | undefined {
    const [id, mac] = Buffer.from(data, 'base64url').toString('utf8').split('.');
    if (!id || !mac || !/^[0-9a-f-]{36}$/.test(id)) return undefined;
    const expected = Buffer.from(this.mac(id));
    const given = Buffer.from(mac);
    return given.length === expected.length && timingSafeEqual(given, expected) ? id : undefined;
  }

  /** CREATED sessions past their expiry read as EXPIRED. */
  static effectiveStatus(s: ClientSessionRow, now: number): SessionStatus {
    return s.status === 'CREATED' && s.expires_at.getTime() <= now ? 'EXPIRED' : s.status;
  }

  /**
   * Why the session takes no payment now, or undefined when it takes one: a CREATED
   * session, or a SUBMITTED one whose latest attempt was refused or failed (a declined
   * card does not end the checkout), while it has attempts left and has not expired.
   * One attempt at a time: the caller holds the session's row lock.
   */
  static paymentRefusal(s: ClientSessionRow, attempts: SessionAttempts, maxAttempts: number, now: number): string | undefined {
    if (s.status === 'ABORTED_BY_MERCHANT') return 'the client session was aborted by the merchant';
    if (s.expires_at.getTime() <= now) return 'the client session has expired';
    if (!s.payment_id) return s.status === 'CREATED' ? undefined : `the client session is ${s.status}`;
    if (attempts.last_status === 'AUTHORIZED') return 'the client session is paid: its payment is authorized';
    if (!RETRYABLE.has(attempts.last_status ?? '')) return 'the client session has a payment in progress';
    if (attempts.count >= maxAttempts) return `the client session has used its ${maxAttempts} payment attempts`;
    return undefined;
  }

  /** What the shopper's page needs to know: may it pay, how many tries are left, how the last one ended. */
  async payability(s: ClientSessionRow): Promise<{ can_pay: boolean; attempts_left: number; last_attempt_status?: string }> {
    const attempts = await clientSessionsRepo.attempts(this.db, s.id);
    return {
      can_pay: ClientSessionsService.paymentRefusal(s, attempts, this.config.maxAttempts, this.now()) === undefined,
      attempts_left: Math.max(0, this.config.maxAttempts - attempts.count),
      ...(attempts.last_status ? { last_attempt_status: attempts.last_status } : {}),
    };
  }

  /**
   * Why an abort is refused, or undefined when it would move the session to
   * ABORTED_BY_MERCHANT: a CREATED session, or a SUBMITTED one whose payment did not
   * authorize (and holds nothing). `paymentStatus` is the authorization status of the
   * session's payment, when it has one.
   */
  static abortRefusal(status: SessionStatus, paymentStatus: AuthorizationStatus | undefined): string | undefined {
    if (status === 'EXPIRED') return 'The client session has expired.';
    if (status === 'ABORTED_BY_MERCHANT') return 'The client session is already aborted.';
    if (paymentStatus === 'AUTHORIZED' || paymentStatus === 'PENDING') {
      return `The payment of this session is ${paymentStatus}; void it instead of aborting the session.`;
    }
    return undefined;
  }

  /** A page of the entity's sessions (GET /v2/client-sessions), with their payment's status; undefined: the cursor is not the entity's. */
  list(q: Queryable, entityId: string, req: PageRequest, statuses?: string[]) {
    const f: Filter = { where: [], params: [] };
    if (statuses) statusFilter(f, statuses, 'CREATED');
    return listsRepo.clientSessions(q, entityId, req, f, SESSION_COLUMNS);
  }

  /** The session as the API answers it; `paymentStatus` (see abortRefusal) decides the abort link. */
  view(s: ClientSessionRow, paymentStatus?: AuthorizationStatus) {
    const status = this.status(s);
    const self = `${this.config.baseUrl}/v2/client-sessions/${s.id}`;
    return {
      id: s.id,
      status,
      amount: s.amount,
      currency: s.currency,
      entity_id: s.entity_id,
      capture_mode: s.capture_mode,
      integration_mode: s.integration_mode,
      allow_future_usage: s.allow_future_usage,
      ...(s.order ? { order: s.order } : {}),
      ...(s.customer ? { customer: s.customer } : {}),
      expires_at: s.expires_at,
      ...(s.shopper_redirection_url ? { shopper_redirection_url: s.shopper_redirection_url } : {}),
      widget: { data: this.widgetData(s.id), js_url: `${this.config.baseUrl}/checkout/widget.js` },
      eligible_solutions: s.eligible_solutions,
      ...(s.payment_id ? { payment_id: s.payment_id } : {}),
      created_at: s.created_at,
      links: {
        self: { href: self, method: 'GET' },
        ...(s.integration_mode === 'HOSTED_PAGE' && status === 'CREATED'
          ? { hosted_page: { href: this.hostedPageUrl(s.id), method: 'GET' } }
          : {}),
        // The spec: "abort and payment appear only when a payment exists"; abort, besides,
        // only while an abort would be accepted (a payment refused or failed, the session open).
        // A CREATED session can still be aborted (POST .../abort), without a link to it.
        ...(s.payment_id && ClientSessionsService.abortRefusal(status, paymentStatus) === undefined ? { abort: { href: `${self}/abort`, method: 'POST' } } : {}),
        ...(s.payment_id ? { payment: { href: `${this.config.baseUrl}/v2/payments/${s.payment_id}`, method: 'GET' } } : {}),
      },
    };
  }

  /**
   * The page where payd renders the checkout itself (integration_mode HOSTED_PAGE). The
   * credential travels in the fragment: never sent to a server, so in no log or Referer.
   */
  hostedPageUrl(id: string): string {
    return `${this.config.baseUrl}/checkout/pay#session=${this.widgetData(id)}`;
  }

  /** A session that pays a payment link (one per attempt; created by the link's page). */
  async createForLink(link: {
    id: string; entity_id: string; amount: number; currency: string; capture_mode: string; allow_future_usage: boolean;
    order: Record<string, unknown> | null; customer: Record<string, unknown> | null; shopper_redirection_url: string | null;
    three_ds_authentication_options: Record<string, unknown> | null; expires_at: Date;
  }): Promise<ClientSessionRow> {
    const expiresAt = new Date(Math.min(link.expires_at.getTime(), this.now() + DEFAULT_SESSION_TTL_MS));
    const eligibleSolutions = await this.eligibility.solutions(link.entity_id, {
      amount: link.amount, currency: link.currency, order: (link.order ?? undefined) as never, customer: (link.customer ?? undefined) as never,
    });
    return clientSessionsRepo.insert(this.db, {
      id: randomUUID(), entity_id: link.entity_id, status: 'CREATED', amount: link.amount, currency: link.currency,
      capture_mode: link.capture_mode, integration_mode: 'HOSTED_PAGE', allow_future_usage: link.allow_future_usage,
      order: link.order, customer: link.customer, shopper_redirection_url: link.shopper_redirection_url, expires_at: expiresAt,
      eligible_solutions: eligibleSolutions, payment_link_id: link.id, three_ds_authentication_options: link.three_ds_authentication_options,
    });
  }

  async create(entityId: string, body: CreateClientSessionBody) {
    if (body.entity_id && body.entity_id !== entityId) throw problems.forbidden('entity_id does not match the entity of the credentials.');
    const now = this.now();
    const expiresAt = body.expires_at ? new Date(body.expires_at) : new Date(now + DEFAULT_SESSION_TTL_MS);
    if (expiresAt.getTime() <= now) throw problems.invalidField('expires_at', 'must be in the future');
    if (expiresAt.getTime() > now + MAX_SESSION_TTL_MS) throw problems.invalidField('expires_at', 'must be at most 24 hours from now');
    const eligibleSolutions = await this.eligibility.solutions(entityId, {
      amount: body.amount, currency: body.currency, order: body.order, customer: body.customer,
    });
    const row = await clientSessionsRepo.insert(this.db, {
      id: randomUUID(),
      entity_id: entityId,
      status: 'CREATED',
      amount: body.amount,
      currency: body.currency,
      capture_mode: body.capture_mode ?? 'MANUAL',
      integration_mode: body.integration_mode ?? 'EMBEDDED',
      allow_future_usage: body.allow_future_usage ?? false,
      order: (body.order as Record<string, unknown> | undefined) ?? null,
      customer: (body.customer as Record<string, unknown> | undefined) ?? null,
      shopper_redirection_url: body.shopper_redirection_url ?? null,
      expires_at: expiresAt,
      eligible_solutions: eligibleSolutions,
    });
    return this.view(row);
  }

  /** The session row by id alone (browser paths, after the widget credential was checked). */
  async byId(id: string): Promise<ClientSessionRow | undefined> {
    return clientSessionsRepo.getById(this.db, id);
  }

  async get(entityId: string, id: string) {
    const row = await clientSessionsRepo.get(this.db, entityId, id);
    if (!row) throw problems.notFoundNoBody();
    return this.view(row, await this.paymentStatus(this.db, row));
  }

  /** The authorization status of the session's payment, when it has one. */
  private async paymentStatus(q: Queryable, s: ClientSessionRow): Promise<AuthorizationStatus | undefined> {
    return s.payment_id ? (await paymentsRepo.get(q, s.entity_id, s.payment_id))?.authorization_status : undefined;
  }

  async abort(entityId: string, id: string) {
    const row = await this.db.transaction(async (tx) => {
      const s = await clientSessionsRepo.get(tx, entityId, id, true);
      if (!s) throw problems.notFoundNoBody();
      const status = this.status(s);
      if (status === 'ABORTED_BY_MERCHANT') return s;
      const refusal = ClientSessionsService.abortRefusal(status, await this.paymentStatus(tx, s));
      if (refusal) throw problems.refused('client-session-status', 'Status incompatible with abort', refusal);
      return clientSessionsRepo.setStatus(tx, id, 'ABORTED_BY_MERCHANT');
    });
    return this.view(row);
  }
}
