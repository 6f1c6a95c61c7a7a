// Payment links: a merchant creates a link, the customer pays it on payd's page. Each
// attempt is a client session of the link; at most one attempt runs at a time (a claim
// on the link row that lapses after ATTEMPT_CLAIM_MS), and the first authorized payment
// makes the link PAID. Events go to the link's webhook through the outbox, in the same
// transaction as the change.
import type { EventTypeName } from '../webhooks/catalogue.ts';
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../platform/db/index.ts';
import { problems } from '../platform/http/problem.ts';
import { enqueueEvent } from '../webhooks/outbox.ts';
import { maskHeaders } from '../webhooks/header-seal.ts';
import { validateWebhookTarget, type WebhookHeader } from '../webhooks/target.ts';
import type { ClientSessionsService } from '../payments/client-sessions.service.ts';
import { type ClientSessionRow, clientSessionsRepo } from '../payments/client-sessions.repo.ts';
import { LINK_COLUMNS, type LinkAttemptRow, type PaymentLinkRow, linksRepo } from './links.repo.ts';
import { type Filter, listsRepo, statusFilter } from '../payments/lists.repo.ts';
import type { PageRequest } from '../platform/http/lists.ts';
import type { CreatePaymentLinkBody } from './links.schemas.ts';

export const DEFAULT_LINK_TTL_MS = 7 * 86400_000;
export const MAX_LINK_TTL_MS = 90 * 86400_000;
/** An attempt (e.g. a shopper gone quiet on a 3-D Secure page) stops blocking others after this. */
export const ATTEMPT_CLAIM_MS = 15 * 60_000;

export type LinkStatus = 'CREATED' | 'PAID' | 'CANCELLED' | 'EXPIRED';

export class PaymentLinksService {
  constructor(
    private readonly db: Db,
    private readonly sessions: ClientSessionsService,
    private readonly config: {
      baseUrl: string;
      allowPrivateWebhookTargets?: boolean;
      /** Seals a webhook's extra header values for the entity (src/webhooks/header-seal.ts). */
      sealWebhookHeaders: (entityId: string, headers: WebhookHeader[] | undefined) => string | null;
      /** Gives back a payment authorized for a link that another payment paid meanwhile (payments/after-authorization.ts). */
      reverseDuplicatePayment?: (entityId: string, paymentId: string) => Promise<void>;
    },
  ) {}

  static effectiveStatus(l: PaymentLinkRow, now = Date.now()): LinkStatus {
    return l.status === 'CREATED' && l.expires_at.getTime() <= now ? 'EXPIRED' : l.status;
  }

  customerUrl(id: string): string {
    return `${this.config.baseUrl}/pay/${id}`;
  }

  /** A page of the entity's links (GET /v2/payment-links); undefined: the cursor is not the entity's. */
  list(q: Queryable, entityId: string, req: PageRequest, statuses?: string[]): Promise<PaymentLinkRow[] | undefined> {
    const f: Filter = { where: [], params: [] };
    if (statuses) statusFilter(f, statuses, 'CREATED');
    return listsRepo.page<PaymentLinkRow>(q, 'payment_links', LINK_COLUMNS, entityId, req, f);
  }

  /** A link's attempts (payments made through its checkout sessions, declined ones too), newest first, at most 50; the entity's only. */
  attempts(q: Queryable, entityId: string, id: string): Promise<LinkAttemptRow[]> {
    return linksRepo.attempts(q, entityId, id);
  }

  view(l: PaymentLinkRow) {
    const self = `${this.config.baseUrl}/v2/payment-links/${l.id}`;
    const status = PaymentLinksService.effectiveStatus(l);
    return {
      id: l.id,
      version: l.version,
      entity_id: l.entity_id,
      status,
      amount: l.amount,
      currency: l.currency,
      ...(l.shopper_redirection_url ? { shopper_redirection_url: l.shopper_redirection_url } : {}),
      capture_mode: l.capture_mode,
      expires_at: l.expires_at,
      allow_future_usage: l.allow_future_usage,
      ...(l.order ? { order: l.order } : {}),
      ...(l.customer ? { customer: l.customer } : {}),
      ...(l.three_ds_authentication_options ? { three_ds_authentication_options: l.three_ds_authentication_options } : {}),
      // Header values are secrets: shown masked, as stored (sealed values: headers_enc).
      ...(l.webhook ? { webhook: { url: l.webhook.url, ...(l.webhook.headers ? { headers: maskHeaders(l.webhook.headers) } : {}) } } : {}),
      ...(l.payment_id ? { payment_id: l.payment_id } : {}),
      created_at: l.created_at,
      links: {
        self: { href: self, method: 'GET' },
        customer_url: { href: this.customerUrl(l.id), method: 'GET' },
        // Only what would be accepted: a PAID, EXPIRED or CANCELLED link has nothing to cancel.
        ...(status === 'CREATED' ? { cancel: { href: `${self}/cancel`, method: 'POST' } } : {}),
        ...(l.payment_id ? { payment: { href: `${this.config.baseUrl}/v2/payments/${l.payment_id}`, method: 'GET' } } : {}),
      },
    };
  }

  async create(entityId: string, body: CreatePaymentLinkBody) {
    if (body.entity_id && body.entity_id !== entityId) throw problems.forbidden('entity_id does not match the entity of the credentials.');
    const now = Date.now();
    const expiresAt = body.expires_at ? new Date(body.expires_at) : new Date(now + DEFAULT_LINK_TTL_MS);
    if (expiresAt.getTime() <= now) throw problems.invalidField('expires_at', 'must be in the future');
    if (expiresAt.getTime() > now + MAX_LINK_TTL_MS) throw problems.invalidField('expires_at', 'must be at most 90 days from now');
    if (body.webhook) {
      const invalid = validateWebhookTarget(body.webhook, 'webhook.', { allowPrivateTargets: this.config.allowPrivateWebhookTargets ?? true });
      if (invalid.length) throw problems.invalidRequest(`The webhook is invalid: ${invalid.map((p) => `${p.name} ${p.reason}`).join('; ')}`, invalid);
    }
    const row = await linksRepo.insert(this.db, {
      id: randomUUID(),
      entity_id: entityId,
      amount: body.amount,
      currency: body.currency,
      capture_mode: body.capture_mode ?? 'MANUAL',
      shopper_redirection_url: body.shopper_redirection_url ?? null,
      expires_at: expiresAt,
      order: (body.order as Record<string, unknown> | undefined) ?? null,
      customer: (body.customer as Record<string, unknown> | undefined) ?? null,
      three_ds_authentication_options: (body.three_ds_authentication_options as Record<string, unknown> | undefined) ?? null,
      webhook: body.webhook
        ? {
            url: body.webhook.url,
            ...(body.webhook.headers
              ? { headers: maskHeaders(body.webhook.headers), headers_enc: this.config.sealWebhookHeaders(entityId, body.webhook.headers) }
              : {}),
          }
        : null,
      allow_future_usage: body.allow_future_usage ?? false,
    });
    return this.view(row);
  }

  async get(entityId: string, id: string) {
    const row = await linksRepo.get(this.db, entityId, id);
    if (!row) throw problems.notFound('No such payment link for this entity.');
    return this.view(row);
  }

  async cancel(entityId: string, id: string) {
    const row = await this.db.transaction(async (tx) => {
      const l = await linksRepo.get(tx, entityId, id, true);
      if (!l) throw problems.notFound('No such payment link for this entity.');
      const status = PaymentLinksService.effectiveStatus(l);
      if (status === 'CANCELLED') return l;
      const refuse = (why: string) => problems.refused('payment-link-status', 'Status incompatible with cancellation', why);
      if (status === 'PAID') throw refuse('The payment link is PAID; void or refund its payment instead.');
      if (status === 'EXPIRED') throw refuse('The payment link has expired.');
      if (attemptRunning(l)) throw problems.conflict('A payment of this link is in progress (3-D Secure); try again in a few minutes.');
      const cancelled = await linksRepo.cancel(tx, id);
      await this.event(tx, cancelled, 'payment_link.cancelled');
      return cancelled;
    });
    return this.view(row);
  }

  /** The customer page: the link and a session to pay it with (reused on reloads), if payable. */
  async sessionForPage(id: string): Promise<{ link: PaymentLinkRow; status: LinkStatus; session?: ClientSessionRow | undefined; busy?: boolean }> {
    const link = await linksRepo.getById(this.db, id);
    if (!link) throw problems.notFound('No such payment link.');
    const status = PaymentLinksService.effectiveStatus(link);
    if (status !== 'CREATED') return { link, status };
    const open = await linksRepo.openSession(this.db, id);
    const session = open ? await this.sessions.byId(open) : await this.sessions.createForLink(link);
    return { link, status, session, busy: attemptRunning(link) };
  }

  /**
   * Before a session of a link submits a payment: the link must be payable and no other
   * attempt running; the session then holds the claim. Runs under the link's row lock.
   */
  async claimAttempt(tx: Queryable, session: ClientSessionRow): Promise<void> {
    const link = await linksRepo.getById(tx, session.payment_link_id!, true);
    if (!link) throw problems.notFound('No such payment link.');
    const status = PaymentLinksService.effectiveStatus(link);
    if (status !== 'CREATED') {
      throw problems.refused('payment-link-status', 'Payment link not payable', `The payment link is ${status} and accepts no payment.`);
    }
    if (attemptRunning(link) && link.attempt_session_id !== session.id) {
      throw problems.conflict('Another payment of this link is in progress.');
    }
    await linksRepo.setAttempt(tx, link.id, session.id);
  }

  /** An attempt that created no payment (refused input) gives the link back at once. */
  async releaseAttempt(sessionId: string, linkId: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const link = await linksRepo.getById(tx, linkId, true);
      // Read in the transaction: on PGlite (one connection) a read outside it waits for it forever.
      const session = await clientSessionsRepo.getById(tx, sessionId);
      if (link?.status === 'CREATED' && link.attempt_session_id === sessionId && !session?.payment_id) await linksRepo.setAttempt(tx, linkId, null);
    });
  }

  /**
   * After an attempt's authorization is known. The first authorized payment makes the
   * link PAID, even if its claim had lapsed (a slow 3-D Secure page); a later one, from an
   * attempt whose claim lapsed while someone else paid, is given back. A refused or
   * failed attempt releases the claim for the next one.
   */
  async attemptOutcome(session: ClientSessionRow, paymentId: string, authorizationStatus: string): Promise<void> {
    if (!session.payment_link_id || authorizationStatus === 'PENDING') return;
    const duplicate = await this.db.transaction(async (tx) => {
      const link = await linksRepo.getById(tx, session.payment_link_id!, true);
      if (!link) return undefined;
      if (authorizationStatus === 'AUTHORIZED') {
        if (link.payment_id === paymentId) return undefined;
        if (link.status === 'CREATED') {
          const paid = await linksRepo.markPaid(tx, link.id, paymentId);
          await this.event(tx, paid, 'payment_link.paid');
          return undefined;
        }
        return link;
      }
      if (link.status === 'CREATED' && link.attempt_session_id === session.id) {
        await linksRepo.setAttempt(tx, link.id, null);
        await this.event(tx, link, 'payment_link.payment_failed', { payment_id: paymentId, authorization_status: authorizationStatus });
      }
      return undefined;
    });
    if (duplicate && this.config.reverseDuplicatePayment) await this.config.reverseDuplicatePayment(duplicate.entity_id, paymentId);
  }

  private async event(tx: Queryable, link: PaymentLinkRow, type: EventTypeName & `payment_link.${string}`, extra: Record<string, unknown> = {}): Promise<void> {
    await enqueueEvent(tx, {
      entityId: link.entity_id,
      type,
      subjectId: link.id,
      data: { ...JSON.parse(JSON.stringify(this.view(link))), ...extra },
      url: link.webhook?.url ?? null,
      headers: link.webhook?.headers ?? null,
      headersEnc: link.webhook?.headers_enc ?? null,
    });
  }
}

function attemptRunning(l: PaymentLinkRow): boolean {
  return l.attempt_session_id !== null && l.attempt_started_at !== null && Date.now() - l.attempt_started_at.getTime() < ATTEMPT_CLAIM_MS;
}
