// Partner `stripe`, method CARD: Stripe over HTTP with the official `stripe` package.
//
// Stripe objects used (docs/connectors.md says why): a Charge created with capture=false
// is the authorization; POST /v1/charges/{id}/capture the capture (Stripe captures a
// charge once: a partial capture releases the rest); a Refund of a captured charge the
// refund; a Refund of an uncaptured charge the void (Stripe releases the whole hold). The
// Charges API is the one stripe-stateful-mock implements, so every call is exercised by
// the tests over real HTTP. PaymentIntents (3-D Secure) are not used: a card that needs
// authentication is declined by Stripe with authentication_required.
//
// The card reaches Stripe as a token: in test mode (an sk_test_ key) Stripe's documented
// test numbers map to their test tokens (tok_visa, tok_chargeDeclined, ...); any other
// number is tokenised with POST /v1/tokens, which needs raw card data access on the
// Stripe account (payd holds the card in its PCI scope; Stripe never sees payd's CVV
// storage because there is none).
//
// Cards on file (save_token; docs/decisions.md "Saved cards") use Stripe's own mechanism
// for the Charges API: the card is attached to a Stripe Customer (POST /v1/customers with
// the card's token as its source, Idempotency-Key <key>:customer) and the authorization
// charges that customer's card. payd's saved card names the authorization's charge; a
// later payment retrieves it for its customer and card, and charges them again
// (metadata payd_initiator: CUSTOMER or MERCHANT). The Charges API has no
// setup_future_usage / off_session (those are PaymentIntents parameters, which this
// connector and stripe-stateful-mock do not use), and takes no CVC for a customer's saved
// card. Deleting the saved card deletes the card from the Customer.
//
// payd's partner key is Stripe's Idempotency-Key on every call that changes something,
// and it is written in the metadata (payd_key) of charges and refunds, so that sync finds
// the object after a lost answer. Unknown statuses are PENDING; Stripe's own retries are
// off (payd retries with the same key from its recovery worker).
import type {
  AuthorizeRequest, CardDetails, CardInstrument, FollowUpRequest, PartnerConnector, PartnerNotification, PartnerResult, SavedCardInstrument, SyncRequest,
} from '../port.ts';

/** What the connector reads of a Stripe charge (the API's Charge object, the fields used). */
interface StripeCharge {
  id: string;
  amount: number;
  amount_captured?: number;
  amount_refunded: number;
  captured: boolean;
  currency: string;
  status: string;
  failure_code?: string | null;
  failure_message?: string | null;
  metadata?: Record<string, string>;
  outcome?: { type?: string; reason?: string | null; seller_message?: string } | null;
  payment_method_details?: { card?: { brand?: string; country?: string | null; funding?: string; last4?: string; network?: string } } | null;
  /** The card charged: a customer's card carries its customer. */
  source?: { id?: string; customer?: string | null } | null;
  customer?: string | null;
}

interface StripeRefund {
  id: string;
  amount: number;
  status: string | null;
  charge: string | null | { id: string };
  metadata?: Record<string, string>;
  failure_reason?: string;
}

interface StripeListPage<T> { data: T[]; has_more: boolean }

/** Per-request options of the stripe package: the idempotency key, and the connected account (Stripe Connect). */
interface RequestOptions { idempotencyKey?: string; stripeAccount?: string }

/** The slice of the stripe package's client this connector calls. */
interface StripeClient {
  charges: {
    create(params: Record<string, unknown>, options?: RequestOptions): Promise<StripeCharge>;
    retrieve(id: string, params?: Record<string, unknown>, options?: RequestOptions): Promise<StripeCharge>;
    capture(id: string, params: Record<string, unknown>, options?: RequestOptions): Promise<StripeCharge>;
    list(params: Record<string, unknown>, options?: RequestOptions): Promise<StripeListPage<StripeCharge>>;
  };
  refunds: {
    create(params: Record<string, unknown>, options?: RequestOptions): Promise<StripeRefund>;
    list(params: Record<string, unknown>, options?: RequestOptions): Promise<StripeListPage<StripeRefund>>;
  };
  tokens: { create(params: Record<string, unknown>, options?: RequestOptions): Promise<{ id: string }> };
  customers: {
    create(params: Record<string, unknown>, options?: RequestOptions): Promise<{ id: string; default_source: string | null }>;
    deleteSource(customerId: string, id: string, params?: Record<string, unknown>, options?: RequestOptions): Promise<unknown>;
  };
  webhooks: { constructEvent(payload: string, header: string, secret: string): { id: string; type: string; data: { object: unknown } } };
}

/**
 * The Stripe account that takes an entity's payments: its own secret key (a separate
 * Stripe account), or a connected account of the platform's key (Stripe Connect, the
 * Stripe-Account header), or both.
 */
export interface StripeAccount {
  /** payd entity ids whose payments go to this account. */
  entities: string[];
  secretKey?: string;
  /** A connected account (acct_...), reached with the platform's key (or this entry's own). */
  stripeAccount?: string;
  /** Signing secret of this account's webhook endpoint. */
  webhookSecret?: string;
}

export interface StripeOptions {
  /** Partner name (default `stripe`). */
  name?: string;
  /** The default account's key: every entity that `accounts` does not name. Absent: only those entities. */
  secretKey?: string;
  /** Per-entity accounts (docs/connectors.md). */
  accounts?: StripeAccount[];
  /** Base URL of the Stripe API (default https://api.stripe.com; a local mock in tests). */
  apiBase?: string;
  /** Signing secret of the Stripe webhook endpoint (whsec_...): inbound notifications. */
  webhookSecret?: string;
  /** Per-request timeout of the HTTP client; payd's own partner deadline is usually shorter. */
  timeoutMs?: number;
  currencies?: string[];
}

/** Stripe's documented test card numbers and their test tokens (test mode only). */
export const STRIPE_TEST_TOKENS: Record<string, string> = {
  '4242424242424242': 'tok_visa',
  '4000056655665556': 'tok_visa_debit',
  '5555555555554444': 'tok_mastercard',
  '5200828282828210': 'tok_mastercard_debit',
  '378282246310005': 'tok_amex',
  '4000000000000002': 'tok_chargeDeclined',
  '4000000000009995': 'tok_chargeDeclinedInsufficientFunds',
  '4100000000000019': 'tok_chargeDeclinedFraudulent',
  '4000000000000127': 'tok_chargeDeclinedIncorrectCvc',
  '4000000000000069': 'tok_chargeDeclinedExpiredCard',
  '4000000000000119': 'tok_chargeDeclinedProcessingError',
};

/** Stripe errors whose outcome is known: the request was refused, nothing happened. */
const REFUSING = new Set(['card_error', 'StripeCardError']);
const INVALID = new Set(['invalid_request_error', 'StripeInvalidRequestError']);

interface StripeErrorLike { type?: string; rawType?: string; code?: string; decline_code?: string; message?: string; statusCode?: number; charge?: string }

function stripeError(err: unknown): StripeErrorLike | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as StripeErrorLike;
  return typeof e.type === 'string' || typeof e.rawType === 'string' ? e : undefined;
}

const FUNDING: Record<string, string> = { credit: 'CREDIT', debit: 'DEBIT', prepaid: 'PREPAID' };

/** The Customer and card a charge of a customer's card was made with (Stripe names the customer on the charge, or on its card). */
function savedCardOf(charge: StripeCharge): { customer: string; card: string } | undefined {
  const customer = charge.customer ?? charge.source?.customer ?? undefined;
  const card = charge.source?.id;
  return customer && card ? { customer, card } : undefined;
}

export class StripeConnector implements PartnerConnector {
  readonly name: string;
  readonly methods = ['CARD'] as const;
  /** A charge is captured once: a partial capture releases the rest (docs/connectors.md). */
  readonly capturesOnce = true;
  readonly limits: PartnerConnector['limits'];
  /** One client per secret key (a connected account shares its platform's client). */
  private readonly clients = new Map<string, Promise<StripeClient>>();
  private readonly byEntity = new Map<string, { secretKey: string; stripeAccount?: string }>();

  constructor(private readonly options: StripeOptions) {
    this.name = options.name ?? 'stripe';
    // Stripe's minimum charge is 0.50 in these currencies (0.30 GBP): 50 keeps every one valid.
    this.limits = { currencies: options.currencies ?? ['EUR', 'USD', 'GBP', 'CHF'], min_amount: 50, max_amount: 99_999_999 };
    for (const a of options.accounts ?? []) {
      const secretKey = a.secretKey ?? options.secretKey;
      if (!secretKey) throw new Error(`Stripe account for ${a.entities.join(', ')}: no secret key (its own or the default)`);
      for (const e of a.entities) this.byEntity.set(e, { secretKey, ...(a.stripeAccount ? { stripeAccount: a.stripeAccount } : {}) });
    }
    if (!options.secretKey && this.byEntity.size === 0) throw new Error('Stripe: a secret key or per-entity accounts are required');
  }

  serves(entityId: string): boolean {
    return this.options.secretKey !== undefined || this.byEntity.has(entityId);
  }

  /** Whether payments of this entity go to a Stripe test account (sk_test_). */
  testMode(entityId: string): boolean {
    return (this.byEntity.get(entityId)?.secretKey ?? this.options.secretKey ?? '').startsWith('sk_test_');
  }

  /** The signing secrets of every webhook endpoint (the default one and each account's). */
  get webhookSecrets(): string[] {
    return [...new Set([this.options.webhookSecret, ...(this.options.accounts ?? []).map((a) => a.webhookSecret)].filter((x): x is string => !!x))];
  }

  /**
   * The client and the request options for this entity's account. An entity no account
   * serves throws: the call's outcome is then unknown to payd, which never sends one
   * (payments.service refuses the partner at creation; recovery logs and retries).
   */
  private async account(entityId: string): Promise<{ stripe: StripeClient; opts: RequestOptions }> {
    const a = this.byEntity.get(entityId) ?? (this.options.secretKey ? { secretKey: this.options.secretKey } : undefined);
    if (!a) throw new Error(`partner ${this.name} has no Stripe account for entity ${entityId}`);
    return { stripe: await this.client(a.secretKey), opts: a.stripeAccount ? { stripeAccount: a.stripeAccount } : {} };
  }

  /** Any client, for what needs no account (verifying a webhook's signature). */
  private anyClient(): Promise<StripeClient> {
    return this.client(this.options.secretKey ?? [...this.byEntity.values()][0]!.secretKey);
  }

  /** The stripe package is loaded on first use: a payd without a Stripe partner never loads it. */
  private client(secretKey: string): Promise<StripeClient> {
    let client = this.clients.get(secretKey);
    if (client) return client;
    client = import('stripe').then(({ default: Stripe }) => {
      const base = new URL(this.options.apiBase ?? 'https://api.stripe.com');
      return new Stripe(secretKey, {
        host: base.hostname,
        port: base.port || (base.protocol === 'https:' ? 443 : 80),
        protocol: base.protocol === 'https:' ? 'https' : 'http',
        maxNetworkRetries: 0,
        timeout: this.options.timeoutMs ?? 30_000,
        telemetry: false,
      }) as unknown as StripeClient;
    });
    this.clients.set(secretKey, client);
    return client;
  }

  async authorize(req: AuthorizeRequest): Promise<PartnerResult> {
    if (req.instrument.type === 'SAVED_CARD') return this.authorizeSaved(req, req.instrument);
    if (req.instrument.type !== 'CARD') {
      return { outcome: 'ERROR', partner_status: 'unsupported_instrument', status_code: 'UNSUPPORTED_INSTRUMENT', partner_status_description: 'Stripe takes cards only' };
    }
    const { stripe, opts } = await this.account(req.entityId);
    let source: string;
    try {
      source = await this.token(stripe, opts, this.testMode(req.entityId), req.instrument, req.key);
    } catch (err) {
      const known = this.refusal(err);
      if (known) return { ...known, card: req.card };
      throw err;
    }
    try {
      // A card to keep: attached to a Customer first (Stripe refuses a declined card there), then that customer's card charged.
      const customer = req.save_token
        ? await stripe.customers.create({ source, metadata: { payd_key: req.key, payd_entity: req.entityId } }, { ...opts, idempotencyKey: `${req.key}:customer` })
        : undefined;
      const charge = await stripe.charges.create({
        amount: req.amount, currency: req.currency.toLowerCase(), capture: 'false',
        ...(customer ? { customer: customer.id, ...(customer.default_source ? { source: customer.default_source } : {}) } : { source }),
        metadata: { payd_key: req.key, payd_entity: req.entityId, ...(customer ? { payd_saved: 'true' } : {}) },
      }, { ...opts, idempotencyKey: req.key });
      return this.authorization(charge, req.card);
    } catch (err) {
      const known = this.refusal(err);
      if (known) return { ...known, card: req.card };
      throw err;
    }
  }

  /**
   * A payment with a saved card: the charge that saved it gives the Stripe Customer and
   * its card, which are charged again. A reference Stripe does not know, or whose card is
   * no longer attached, is refused (INVALID_TOKEN).
   */
  private async authorizeSaved(req: AuthorizeRequest, instrument: SavedCardInstrument): Promise<PartnerResult> {
    const { stripe, opts } = await this.account(req.entityId);
    const invalid: PartnerResult = { outcome: 'REFUSED', partner_status: 'invalid_token', status_code: 'INVALID_TOKEN',
      partner_status_description: 'Stripe keeps no card under this reference', ...(req.card ? { card: req.card } : {}) };
    let saved: { customer: string; card: string } | undefined;
    try {
      saved = savedCardOf(await stripe.charges.retrieve(instrument.reference, {}, opts));
    } catch (err) {
      if (!this.refusal(err)) throw err;
    }
    if (!saved) return invalid;
    try {
      const charge = await stripe.charges.create({
        amount: req.amount, currency: req.currency.toLowerCase(), capture: 'false', customer: saved.customer, source: saved.card,
        metadata: { payd_key: req.key, payd_entity: req.entityId, payd_initiator: instrument.initiator },
      }, { ...opts, idempotencyKey: req.key });
      return this.authorization(charge, req.card);
    } catch (err) {
      const known = this.refusal(err);
      if (known?.outcome === 'ERROR') return invalid; // (the card was deleted from the customer)
      if (known) return { ...known, ...(req.card ? { card: req.card } : {}) };
      throw err;
    }
  }

  /** Deletes the saved card from its Stripe Customer (the charge that saved it names both). */
  async forgetCard(req: { entityId: string; reference: string }): Promise<void> {
    const { stripe, opts } = await this.account(req.entityId);
    const saved = savedCardOf(await stripe.charges.retrieve(req.reference, {}, opts));
    if (saved) await stripe.customers.deleteSource(saved.customer, saved.card, {}, opts);
  }

  async capture(req: FollowUpRequest): Promise<PartnerResult> {
    const { stripe, opts } = await this.account(req.entityId);
    // A charge released by a void cannot be captured (Stripe refuses it; its mock does not):
    // checked first, so that no connector answer depends on the sandbox's leniency.
    try {
      const current = await stripe.charges.retrieve(req.authorization_reference, {}, opts);
      if (!current.captured && current.amount_refunded >= current.amount) {
        return { outcome: 'REFUSED', partner_reference: current.id, partner_status: 'charge_refunded', status_code: 'AMOUNT_NOT_AVAILABLE',
          partner_status_description: 'The authorization was released (voided)' };
      }
      const charge = await stripe.charges.capture(req.authorization_reference, { amount: req.amount }, { ...opts, idempotencyKey: req.key });
      return { outcome: 'SUCCESS', partner_reference: charge.id, partner_status: 'captured', status_code: 'SUCCEEDED', partner_status_description: `Captured ${req.amount}` };
    } catch (err) {
      const e = stripeError(err);
      if (e?.code === 'charge_already_captured') {
        return { outcome: 'REFUSED', partner_status: 'charge_already_captured', status_code: 'AMOUNT_NOT_AVAILABLE',
          partner_status_description: 'Stripe captures a charge once: a partial capture released the rest' };
      }
      const known = this.refusal(err);
      if (known) return known;
      throw err;
    }
  }

  async refund(req: FollowUpRequest): Promise<PartnerResult> {
    const { stripe, opts } = await this.account(req.entityId);
    try {
      const refund = await stripe.refunds.create({ charge: req.authorization_reference, amount: req.amount, metadata: { payd_key: req.key } }, { ...opts, idempotencyKey: req.key });
      return this.refundResult(refund);
    } catch (err) {
      const known = this.refusal(err);
      if (known) return known;
      throw err;
    }
  }

  /**
   * Releases the uncaptured hold: a Refund of the uncaptured charge (Stripe releases it
   * whole). After a capture, Stripe has already released the rest of the hold: the void
   * of what remains succeeds without a call that would move money.
   */
  async void(req: FollowUpRequest): Promise<PartnerResult> {
    const { stripe, opts } = await this.account(req.entityId);
    let charge: StripeCharge;
    try {
      charge = await stripe.charges.retrieve(req.authorization_reference, {}, opts);
    } catch (err) {
      const known = this.refusal(err);
      if (known) return known;
      throw err;
    }
    const captured = charge.amount_captured ?? (charge.captured ? charge.amount - charge.amount_refunded : 0);
    if (charge.captured || charge.amount_refunded >= charge.amount) {
      const released = charge.amount - captured;
      if (req.amount <= released) {
        return { outcome: 'SUCCESS', partner_reference: charge.id, partner_status: 'released', status_code: 'SUCCEEDED', partner_status_description: 'The uncaptured amount is released' };
      }
      return { outcome: 'REFUSED', partner_status: 'charge_already_captured', status_code: 'AMOUNT_NOT_AVAILABLE', partner_status_description: `Only ${released} is left uncaptured` };
    }
    try {
      const refund = await stripe.refunds.create({ charge: charge.id, metadata: { payd_key: req.key } }, { ...opts, idempotencyKey: req.key });
      return this.refundResult(refund);
    } catch (err) {
      const known = this.refusal(err);
      if (known) return known;
      throw err;
    }
  }

  /**
   * Finds the Stripe object of a call by payd's key: a charge (authorization) in the
   * charges created since the call, a refund (refund, void) among the charge's refunds,
   * the charge's capture state (capture). NOT_FOUND: Stripe never received the call.
   */
  async sync(req: SyncRequest): Promise<PartnerResult | 'NOT_FOUND'> {
    const { stripe, opts } = await this.account(req.entityId);
    const ctx = req.context;
    if (req.kind === 'AUTHORIZATION') {
      const since = ctx ? Math.floor(ctx.sent_at.getTime() / 1000) - 300 : undefined;
      let startingAfter: string | undefined;
      for (let page = 0; page < 50; page++) {
        const list = await stripe.charges.list({ limit: 100, ...(since ? { created: { gte: since } } : {}), ...(startingAfter ? { starting_after: startingAfter } : {}) }, opts);
        const found = list.data.find((c) => c.metadata?.payd_key === req.key);
        if (found) return this.authorization(found, undefined);
        if (!list.has_more || list.data.length === 0) return 'NOT_FOUND';
        startingAfter = list.data.at(-1)!.id;
      }
      return 'NOT_FOUND';
    }
    if (!ctx?.authorization_reference) return 'NOT_FOUND';
    if (req.kind === 'CAPTURE') {
      const charge = await stripe.charges.retrieve(ctx.authorization_reference, {}, opts);
      if (!charge.captured) return 'NOT_FOUND';
      return { outcome: 'SUCCESS', partner_reference: charge.id, partner_status: 'captured', status_code: 'SUCCEEDED' };
    }
    const refunds = await stripe.refunds.list({ charge: ctx.authorization_reference, limit: 100 }, opts);
    const refund = refunds.data.find((r) => r.metadata?.payd_key === req.key);
    if (refund) return this.refundResult(refund);
    if (req.kind === 'VOID') {
      // A void after a capture made no call: the hold is released when the charge is captured.
      const charge = await stripe.charges.retrieve(ctx.authorization_reference, {}, opts);
      if (charge.captured) return { outcome: 'SUCCESS', partner_reference: charge.id, partner_status: 'released', status_code: 'SUCCEEDED' };
    }
    return 'NOT_FOUND';
  }

  /**
   * Stripe's signed webhooks (Stripe-Signature, verified with the endpoint's signing
   * secret and a 5-minute tolerance by the stripe package). charge.succeeded / failed /
   * pending settle the authorization whose payd_key the charge carries; charge.captured
   * the pending capture of that charge; charge.refunded (and refund events) the refunds
   * and voids whose payd_key the refunds carry. Other events are acknowledged and ignored.
   */
  async notification(rawBody: string, headers: Record<string, string | string[] | undefined>): Promise<PartnerNotification[] | 'UNVERIFIED'> {
    const header = headers['stripe-signature'];
    const secrets = this.webhookSecrets;
    if (secrets.length === 0 || typeof header !== 'string') return 'UNVERIFIED';
    const stripe = await this.anyClient();
    // The endpoint's secret signed it: one of the default endpoint's and each account's.
    let event: { type: string; data: { object: unknown } } | undefined;
    for (const secret of secrets) {
      try {
        event = stripe.webhooks.constructEvent(rawBody, header, secret);
        break;
      } catch {
        // another account's endpoint, or forged
      }
    }
    if (!event) return 'UNVERIFIED';
    if (event.type.startsWith('charge.refund') || event.type === 'refund.updated' || event.type === 'refund.created' || event.type === 'refund.failed') {
      const refunds = event.type.startsWith('refund.') ? [event.data.object as StripeRefund]
        : ((event.data.object as StripeCharge & { refunds?: { data?: StripeRefund[] } }).refunds?.data ?? []);
      return refunds.filter((r) => r.metadata?.payd_key).map((r) => ({ key: r.metadata!.payd_key!, result: this.refundResult(r) }));
    }
    if (!event.type.startsWith('charge.')) return [];
    const charge = event.data.object as StripeCharge;
    if (event.type === 'charge.captured') {
      return [{ kind: 'CAPTURE', authorization_reference: charge.id, result: { outcome: 'SUCCESS', partner_reference: charge.id, partner_status: 'captured', status_code: 'SUCCEEDED' } }];
    }
    const key = charge.metadata?.payd_key;
    if (!key || !['charge.succeeded', 'charge.failed', 'charge.pending', 'charge.updated'].includes(event.type)) return [];
    return [{ key, kind: 'AUTHORIZATION', result: this.authorization(charge, undefined) }];
  }

  // ---- mapping ----

  private async token(stripe: StripeClient, opts: RequestOptions, testMode: boolean, card: CardInstrument, key: string): Promise<string> {
    const test = testMode ? STRIPE_TEST_TOKENS[card.number] : undefined;
    if (test) return test;
    const token = await stripe.tokens.create({
      card: { number: card.number, exp_month: card.expiry_month, exp_year: card.expiry_year, ...(card.cvv ? { cvc: card.cvv } : {}), ...(card.holder_name ? { name: card.holder_name } : {}) },
    }, { ...opts, idempotencyKey: `${key}:token` });
    return token.id;
  }

  /** A charge as payd's authorization answer. Unknown statuses are PENDING. */
  private authorization(charge: StripeCharge, card: CardDetails | undefined): PartnerResult {
    const details = charge.payment_method_details?.card;
    const merged: CardDetails | undefined = card && details ? {
      ...card,
      ...(details.funding && FUNDING[details.funding] ? { type: FUNDING[details.funding]! } : {}),
      ...(details.country ? { country_code: details.country } : {}),
      ...(details.brand ? { selected_network: details.brand.toUpperCase() } : {}),
    } : card;
    const base = { partner_reference: charge.id, partner_status: charge.status, ...(merged ? { card: merged } : {}) };
    if (charge.status === 'succeeded' && !charge.captured) {
      // A card attached to a Customer for later payments is kept once its charge is authorized.
      const saved = charge.metadata?.payd_saved === 'true' && savedCardOf(charge) !== undefined;
      return { ...base, outcome: 'SUCCESS', status_code: 'SUCCEEDED', partner_status_description: charge.outcome?.seller_message ?? 'Authorized', ...(saved ? { token_saved: true } : {}) };
    }
    if (charge.status === 'failed') {
      return { ...base, outcome: 'REFUSED', status_code: (charge.outcome?.reason ?? charge.failure_code ?? 'declined').toUpperCase(), partner_status_description: charge.failure_message ?? 'Declined' };
    }
    if (charge.status === 'succeeded' && charge.captured) {
      // Captured at creation: payd asked for capture=false, so this is not an authorization it can manage.
      return { ...base, outcome: 'ERROR', status_code: 'UNEXPECTED_CAPTURE', partner_status_description: 'Stripe captured the charge at creation' };
    }
    return { ...base, outcome: 'PENDING', status_code: 'PENDING', partner_status_description: `Stripe status ${charge.status}` };
  }

  private refundResult(refund: StripeRefund): PartnerResult {
    const base = { partner_reference: refund.id, partner_status: refund.status ?? 'unknown' };
    if (refund.status === 'succeeded') return { ...base, outcome: 'SUCCESS', status_code: 'SUCCEEDED', partner_status_description: 'Refunded' };
    if (refund.status === 'failed' || refund.status === 'canceled') {
      return { ...base, outcome: 'REFUSED', status_code: (refund.failure_reason ?? 'refund_failed').toUpperCase(), partner_status_description: `Stripe refund ${refund.status}` };
    }
    return { ...base, outcome: 'PENDING', status_code: 'PENDING', partner_status_description: `Stripe refund ${refund.status ?? 'without status'}` };
  }

  /**
   * A Stripe error whose outcome is known (a decline, an invalid request: nothing
   * happened) as payd's answer; undefined for the others (network, 5xx, rate limit,
   * idempotency conflicts), whose outcome is unknown: the caller rethrows and payd keeps
   * the transaction PENDING until a sync.
   */
  private refusal(err: unknown): PartnerResult | undefined {
    const e = stripeError(err);
    if (!e) return undefined;
    const type = e.rawType ?? e.type ?? '';
    if (REFUSING.has(type) || REFUSING.has(e.type ?? '')) {
      return { outcome: 'REFUSED', ...(e.charge ? { partner_reference: e.charge } : {}), partner_status: e.code ?? 'card_declined',
        status_code: (e.decline_code ?? e.code ?? 'declined').toUpperCase(), partner_status_description: e.message ?? 'Declined' };
    }
    if ((INVALID.has(type) || INVALID.has(e.type ?? '')) && e.statusCode !== undefined && e.statusCode !== 409 && e.statusCode < 500) {
      return { outcome: 'ERROR', partner_status: e.code ?? 'invalid_request', status_code: (e.code ?? 'INVALID_REQUEST').toUpperCase(), partner_status_description: e.message ?? 'Stripe refused the request' };
    }
    return undefined;
  }
}
