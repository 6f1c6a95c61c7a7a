// What the shopper's browser may do, with the session credential (widget.data) and
// never a merchant key: read its session, submit one payment, come back to the merchant
// with a signed service-redirection-data token.
import { problems } from '../platform/http/problem.ts';
import type { ClientSessionsService } from '../payments/client-sessions.service.ts';
import { ClientSessionsService as Sessions } from '../payments/client-sessions.service.ts';
import type { ClientSessionRow } from '../payments/client-sessions.repo.ts';
import type { PaymentsService } from '../payments/payments.service.ts';
import type { CreatePaymentBody } from '../payments/payments.schemas.ts';
import type { PaymentLinksService } from '../links/links.service.ts';
import type { RedirectionTokens } from './redirection-token.ts';
import type { Db } from '../platform/db/index.ts';
import { entitiesRepo } from '../admin/entities.repo.ts';
import { type Locale, t } from '../web/i18n.ts';
import { type LanguageChoice, shopperLocale } from '../web/language.ts';
import { inShopperWords } from './shopper-problems.ts';
import type { PartnerRegistry } from '../partners/port.ts';
import { methodMeaning } from '../partners/methods.ts';
import type { ReturnLinks, ReturnPurpose } from '../payments/return-links.ts';
import { declineReason } from './decline-reasons.ts';
import { type SavedCardRow, savedCardsRepo } from '../payments/saved-cards.repo.ts';
import { cardExpired } from '../payments/saved-cards.service.ts';
import { systemClock } from '../platform/clock.ts';

export interface SubmitBody {
  split: CreatePaymentBody['split'];
  browser?: CreatePaymentBody['browser'];
  /** The shopper's email, asked by the widget when a method needs it and the session has none; for this payment only. */
  customer_email?: string;
}

/** What the widget can ask the shopper for itself, when a solution needs it and the session lacks it. */
const ASKABLE = { 'customer.email': 'customer_email' } as const;

export class CheckoutService {
  constructor(
    private readonly db: Db,
    private readonly sessions: ClientSessionsService,
    private readonly payments: PaymentsService,
    private readonly links: PaymentLinksService,
    private readonly redirection: RedirectionTokens,
    private readonly partners: PartnerRegistry,
    private readonly config: { baseUrl: string; returnLinks: ReturnLinks; clock?: () => number },
  ) {}

  /** The session a credential stands for; 401 for a credential payd did not make. */
  async session(data: string | undefined): Promise<ClientSessionRow> {
    const id = data ? this.sessions.verifyWidgetData(data) : undefined;
    if (!id) throw problems.unauthorized('The checkout credential is missing or not valid.', 'PaydSession realm="checkout"');
    const s = await this.sessions.byId(id);
    if (!s) throw problems.unauthorized('The checkout credential is not valid.', 'PaydSession realm="checkout"');
    return s;
  }

  returnUrl(sessionId: string): string {
    return this.config.returnLinks.returnUrl(sessionId);
  }

  /** Whether a return address's MAC (its t parameter) is payd's. */
  returnOk(purpose: ReturnPurpose, id: string, t: unknown): boolean {
    return this.config.returnLinks.verify(purpose, id, t);
  }

  /** The merchant's display name (the entity's name), shown to shoppers on every page. */
  async merchantName(entityId: string): Promise<string> {
    return (await entitiesRepo.get(this.db, entityId))?.name ?? '';
  }

  /** What the widget shows, in the shopper's language (src/web/language.ts). */
  async describe(data: string | undefined, choice: LanguageChoice = {}) {
    const s = await this.session(data);
    const payment = s.payment_id ? await this.payments.getStored(s.entity_id, s.payment_id) : undefined;
    const payability = await this.sessions.payability(s);
    return {
      client_session_id: s.id,
      status: this.sessions.status(s),
      locale: sessionLocale(s, choice),
      merchant: { name: await this.merchantName(s.entity_id) },
      order: orderSummary(s.order),
      amount: s.amount,
      currency: s.currency,
      expires_at: s.expires_at,
      eligible_solutions: this.offered(s),
      saved_cards: (await this.savedCards(s)).map((c) => ({
        id: c.id, partner: c.partner, selected_network: c.selected_network, last_four_digits: c.last_four_digits, expiry_month: c.expiry_month, expiry_year: c.expiry_year,
      })),
      ...payability,
      ...(payment ? { payment: { id: payment.id, authorization_status: payment.authorization.status } } : {}),
      return_url: this.returnUrl(s.id),
    };
  }

  /**
   * The solutions the shopper is offered: the session's eligible solutions that can
   * succeed with what the session holds or what the widget can ask the shopper for (a
   * buy-now-pay-later provider needs the customer's email: without one in the session,
   * the solution says `requires: ['customer_email']` and the widget asks for it).
   */
  private offered(s: ClientSessionRow): Array<ClientSessionRow['eligible_solutions'][number] & { requires?: Array<'customer_email'> }> {
    const email = typeof s.customer?.email === 'string' && s.customer.email.length > 0;
    const out = [];
    for (const e of s.eligible_solutions) {
      const missing = methodMeaning(e.method).requires.filter((r) => !(r === 'customer.email' && email));
      if (missing.some((r) => !(r in ASKABLE))) continue;
      out.push(missing.length ? { ...e, requires: missing.map((r) => ASKABLE[r]) } : e);
    }
    return out;
  }

  /**
   * The saved cards the shopper of this session may pay with (docs/checkout.md, Saved
   * cards): the session customer's by customer.reference only, the merchant's own id of
   * its customer (as Stripe lists a Customer's payment methods by its id), kept by a
   * partner the session offers for CARD, not expired. Never by email: an email is what a
   * shopper types (a guest checkout, the widget's BNPL field), so whoever typed another
   * shopper's would see and pay with that shopper's cards. None without a reference.
   */
  private async savedCards(s: ClientSessionRow): Promise<SavedCardRow[]> {
    const reference = typeof s.customer?.reference === 'string' && s.customer.reference ? s.customer.reference : undefined;
    if (!reference) return [];
    const partners = new Set(this.offered(s).filter((e) => methodMeaning(e.method).cardOnFile).map((e) => e.partner));
    if (partners.size === 0) return [];
    const now = (this.config.clock ?? systemClock)();
    const rows = await savedCardsRepo.list(this.db, s.entity_id, { reference });
    return rows.filter((c) => partners.has(c.partner) && !cardExpired(c.expiry_month, c.expiry_year, now));
  }

  /**
   * Submits one payment attempt: the session moves to SUBMITTED and the payment is
   * created. A refused or failed attempt leaves the session payable (within its
   * attempts): the answer says so (can_retry), and the widget asks for another card.
   */
  async submit(data: string | undefined, body: SubmitBody) {
    const s = await this.session(data);
    const before = await this.sessions.payability(s);
    if (!before.can_pay) {
      const key = closedReason(s, before.last_attempt_status, this.sessions.now());
      throw inShopperWords(problems.refused('client-session-status', 'This checkout takes no further payment', t('en', key)), key);
    }
    const offered = this.offered(s);
    let needsEmail = false;
    body.split.forEach((part, i) => {
      const solution = offered.find((e) => e.partner === part.partner && e.method === part.method);
      if (!solution) {
        const solution = `${part.partner}/${part.method}`;
        throw inShopperWords(problems.invalidField(`split[${i}]`, t('en', 'errNotEligible', { solution })), 'errNotEligible', { solution });
      }
      if (solution.requires?.includes('customer_email')) needsEmail = true;
    });
    if (body.customer_email !== undefined && typeof s.customer?.email === 'string' && s.customer.email) {
      throw inShopperWords(problems.invalidField('customer_email', t('en', 'errEmailGiven')), 'errEmailGiven');
    }
    if (body.customer_email !== undefined && !needsEmail) {
      // The shopper's email is asked for a method that needs it, and taken for nothing else.
      throw inShopperWords(problems.invalidField('customer_email', t('en', 'errEmailNotAsked')), 'errEmailNotAsked');
    }
    if (needsEmail && !body.customer_email) {
      throw inShopperWords(problems.invalidField('customer_email', t('en', 'errEmailRequired')), 'errEmailRequired');
    }
    // Whether a card is kept on file is the merchant's decision (the session's allow_future_usage), not the shopper's.
    body.split.forEach((part, i) => {
      if (part.save_token !== undefined) {
        throw problems.invalidField(`split[${i}].save_token`, 'set by the session: a card is kept on file when the merchant created the session with allow_future_usage');
      }
    });
    // A saved card: one of this session's customer's, paid by the cardholder with its CVC.
    const named = body.split.flatMap((part, i) => (part.instrument?.type === 'SAVED_CARD' ? [{ i, instrument: part.instrument }] : []));
    if (named.length) {
      const mine = new Set((await this.savedCards(s)).map((c) => c.id));
      for (const { i, instrument } of named) {
        if (!mine.has(instrument.saved_card_id.toLowerCase())) throw problems.invalidField(`split[${i}].instrument.saved_card_id`, 'not a saved card of this checkout\'s customer');
        if (instrument.initiator === 'MERCHANT') throw problems.invalidField(`split[${i}].instrument.initiator`, 'a shopper\'s payment is customer-initiated');
        if (instrument.cvv === undefined) throw problems.invalidField(`split[${i}].instrument.cvv`, 'Required: the card\'s security code');
      }
    }
    // The shopper's email, for this payment only (the session keeps what the merchant gave).
    const customer = body.customer_email ? { ...(s.customer ?? {}), email: body.customer_email } : s.customer;
    // An email the shopper typed names nobody the merchant knows: a payment carrying one keeps no card on file
    // (a card part beside buy-now-pay-later is not saved under it; docs/decisions.md "Saved cards").
    const split = body.customer_email ? body.split.map((part) => (part.instrument?.type === 'CARD' ? { ...part, save_token: false } : part)) : body.split;
    if (s.payment_link_id) await this.db.transaction((tx) => this.links.claimAttempt(tx, s));
    // One key per attempt: a double submit of the same attempt is answered once.
    const attempt = this.sessions.maxAttempts - before.attempts_left + 1;
    let payment;
    try {
      payment = await this.payments.create(s.entity_id, {
        amount: s.amount,
        currency: s.currency as CreatePaymentBody['currency'],
        capture_mode: s.capture_mode as 'MANUAL' | 'AUTOMATIC',
        allow_future_usage: s.allow_future_usage,
        client_session_id: s.id,
        ...(s.order ? { order: s.order as never } : {}),
        ...(customer ? { customer: customer as never } : {}),
        ...(body.browser ? { browser: body.browser } : {}),
        ...(s.three_ds_authentication_options ? { three_ds_authentication_options: s.three_ds_authentication_options as never } : {}),
        split,
      }, attempt === 1 ? `checkout:${s.id}` : `checkout:${s.id}:${attempt}`, `/checkout/v1/session/payments`);
    } catch (err) {
      if (s.payment_link_id) await this.links.releaseAttempt(s.id, s.payment_link_id);
      throw err;
    }
    await this.links.attemptOutcome(s, payment.id, payment.authorization.status);
    const redirection = payment.authorization.status === 'PENDING' ? payment.authorization.redirection : undefined;
    const reason = payment.authorization.status === 'REFUSED'
      ? declineReason(payment.authorization.partner_transactions.filter((t) => t.status === 'REFUSED').map((t) => t.status_code)) : undefined;
    const after = await this.sessions.payability((await this.sessions.byId(s.id))!);
    return {
      payment_id: payment.id,
      authorization_status: payment.authorization.status,
      can_retry: after.can_pay,
      attempts_left: after.attempts_left,
      ...(redirection ? { redirection } : {}),
      ...(reason ? { decline_reason: reason } : {}),
      return_url: this.returnUrl(s.id),
    };
  }

  /**
   * Where the shopper goes back to: the merchant's shopper_redirection_url with the signed
   * token, after settling the payment with its partners. undefined: the session has no
   * redirection URL (the page then shows the outcome itself).
   */
  async finish(sessionId: string): Promise<{ url?: string; session: ClientSessionRow; authorizationStatus: string | null }> {
    const s = await this.sessions.byId(sessionId);
    if (!s) throw problems.notFound('No such client session.');
    let authorizationStatus: string | null = null;
    if (s.payment_id) {
      const payment = await this.payments.get(s.entity_id, s.payment_id);
      authorizationStatus = payment.authorization.status;
      await this.links.attemptOutcome(s, payment.id, authorizationStatus);
    }
    const fresh = (await this.sessions.byId(sessionId))!;
    if (!fresh.shopper_redirection_url) return { session: fresh, authorizationStatus };
    const token = await this.redirection.sign(fresh.entity_id, {
      client_session_id: fresh.id,
      payment_id: fresh.payment_id,
      authorization_status: authorizationStatus,
      client_session_status: this.sessions.status(fresh),
    });
    const url = new URL(fresh.shopper_redirection_url);
    url.searchParams.append('service-redirection-data', token);
    return { url: url.toString(), session: fresh, authorizationStatus };
  }

  /**
   * After the 3-D Secure page: where the shopper goes next. A failed challenge on payd's
   * own pages (hosted page, payment link) goes back to the page, which says so and asks
   * for another card; otherwise the session's return (the merchant, with the token).
   */
  async afterChallenge(paymentId: string): Promise<{ sessionId?: string; retryUrl?: string; authorizationStatus?: string }> {
    const p = await this.payments.findById(paymentId);
    if (!p) return {};
    const view = await this.payments.get(p.entity_id, p.id);
    const authorizationStatus = view.authorization.status;
    if (!p.client_session_id) return { authorizationStatus };
    const s = await this.sessions.byId(p.client_session_id);
    if (s && s.integration_mode === 'HOSTED_PAGE' && s.payment_id === p.id && authorizationStatus !== 'AUTHORIZED' && authorizationStatus !== 'PENDING') {
      await this.links.attemptOutcome(s, p.id, authorizationStatus);
      if ((await this.sessions.payability(s)).can_pay) return { sessionId: s.id, retryUrl: this.sessions.hostedPageUrl(s.id), authorizationStatus };
    }
    return { sessionId: p.client_session_id, authorizationStatus };
  }

  /** What a receipt shows for the session's authorized payment (no redirection URL: payd's page is the end). */
  async receipt(s: ClientSessionRow) {
    if (!s.payment_id) return undefined;
    const p = await this.payments.get(s.entity_id, s.payment_id);
    if (p.authorization.status !== 'AUTHORIZED') return undefined;
    const cards = p.authorization.partner_transactions
      .map((t) => (t as { card?: { selected_network?: string; last_four_digits?: string } }).card)
      .filter((c): c is { selected_network?: string; last_four_digits?: string } => !!c?.last_four_digits);
    return {
      merchant: await this.merchantName(s.entity_id),
      amount: p.amount,
      currency: p.currency,
      order: orderSummary(s.order),
      payment_id: p.id,
      date: new Date(p.created_at),
      methods: p.split.map((x) => x.method),
      cards: cards.map((c) => `${c.selected_network ?? 'Card'} •••• ${c.last_four_digits}`),
    };
  }

  /**
   * The shopper's language for an answer or page of this credential's session (or of
   * none: a credential payd did not make, an unreadable database), never failing.
   */
  async localeFor(data: string | undefined, choice: LanguageChoice): Promise<Locale> {
    const s = data ? await this.session(data).catch(() => undefined) : undefined;
    return sessionLocale(s, choice);
  }

  /**
   * A session's framed pages (the card frame, the 3-D Secure return page), in one read: who
   * may embed them (CSP frame-ancestors: the merchant's checkout origins and payd, or any
   * page) and the merchant's choice of language for the shopper (customer.locale), if any.
   */
  async framing(sessionId: string | undefined): Promise<{ frameAncestors: string; customerLocale: unknown }> {
    const of = sessionId ? await entitiesRepo.framingOfSession(this.db, sessionId) : { checkoutOrigins: [], customerLocale: undefined };
    return { frameAncestors: cardFrameAncestors(of.checkoutOrigins), customerLocale: of.customerLocale };
  }

  /** Whether a session's checkout is a widget on the merchant's page (EMBEDDED). */
  async isEmbedded(sessionId: string): Promise<boolean> {
    return (await this.sessions.byId(sessionId))?.integration_mode === 'EMBEDDED';
  }

  /** A retry address for the session's own page, when the shopper may still pay there. */
  async retryUrl(s: ClientSessionRow): Promise<string | undefined> {
    if (s.integration_mode !== 'HOSTED_PAGE') return undefined;
    return (await this.sessions.payability(s)).can_pay ? this.sessions.hostedPageUrl(s.id) : undefined;
  }
}

/** The language of a session's pages and answers: the shopper's choice, else the merchant's (customer.locale), else the browser's. */
export function sessionLocale(s: ClientSessionRow | undefined, choice: LanguageChoice): Locale {
  return shopperLocale(choice, s?.customer?.locale);
}

/** The part of an order a shopper sees: its reference and item names with quantities (bounded). */
export function orderSummary(order: Record<string, unknown> | null): { reference?: string; items: Array<{ name: string; quantity: number }> } {
  const items: Array<{ name: string; quantity: number }> = [];
  const shipments = Array.isArray(order?.shipments) ? order.shipments as Array<Record<string, unknown>> : [];
  for (const shipment of shipments) {
    for (const line of Array.isArray(shipment?.item_lines) ? shipment.item_lines as Array<Record<string, unknown>> : []) {
      if (typeof line?.name !== 'string' || !line.name || line.type === 'SHIPPING_FEES' || items.length >= 20) continue;
      items.push({ name: line.name.slice(0, 120), quantity: typeof line.quantity === 'number' && line.quantity > 0 ? line.quantity : 1 });
    }
  }
  return { ...(typeof order?.reference === 'string' && order.reference ? { reference: order.reference.slice(0, 120) } : {}), items };
}

/** Why a session takes no payment, in the shopper's words (their key). */
function closedReason(s: ClientSessionRow, lastStatus: string | undefined, now: number) {
  const status = Sessions.effectiveStatus(s, now);
  if (status === 'EXPIRED' || s.expires_at.getTime() <= now) return 'closedExpired';
  if (status === 'ABORTED_BY_MERCHANT') return 'cancelledByMerchant';
  if (lastStatus === 'AUTHORIZED') return 'alreadyPaid';
  if (lastStatus === 'PENDING') return 'inProgress';
  return 'closedTooMany';
}

/**
 * Who may embed payd's card frame and 3-D Secure pages: any page by default, as Stripe
 * Elements (the frame sends nothing to its parent but events and outcomes); when the
 * merchant registered its checkout origins (the entity's checkout_origins), only those and
 * payd's own pages (the hosted page frames the card frame too).
 */
const cardFrameAncestors = (origins: readonly string[]): string => (origins.length ? `'self' ${origins.join(' ')}` : '*');
