// Partner `stripe`, method CARD: Stripe over HTTP with the official `stripe` package.
// This file is the connector's flows (its calls to Stripe: authorize, capture, refund,
// void, sync, notifications); stripe-mappings.ts maps payd's requests to Stripe's
// parameters and Stripe's answers to payd's, with the stripe package's own types;
// stripe-config.ts reads its PAYD_PARTNERS entry.
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
import type Stripe from 'stripe';
import type {
  AuthorizeRequest, FollowUpRequest, PartnerConnector, PartnerNotification, PartnerResult, SavedCardInstrument, SyncRequest,
} from '../port.ts';
import {
  authorizationParams, authorizationResult, capturedResult, customerParams, heldOf, notificationsOf, paydKey, refundResult, refusal,
  releasedResult, savedCardChargeParams, savedCardOf, stripeError, testToken, tokenParams,
} from './stripe-mappings.ts';

export { STRIPE_TEST_TOKENS } from './stripe-mappings.ts';

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
  name?: string | undefined;
  /** The default account's key: every entity that `accounts` does not name. Absent: only those entities. */
  secretKey?: string | undefined;
  /** Per-entity accounts (docs/connectors.md). */
  accounts?: StripeAccount[] | undefined;
  /** Base URL of the Stripe API (default https://api.stripe.com; a local mock in tests). */
  apiBase?: string | undefined;
  /** Signing secret of the Stripe webhook endpoint (whsec_...): inbound notifications. */
  webhookSecret?: string | undefined;
  /** Per-request timeout of the HTTP client; payd's own partner deadline is usually shorter. */
  timeoutMs?: number | undefined;
  currencies?: string[] | undefined;
}

export class StripeConnector implements PartnerConnector {
  readonly name: string;
  readonly methods = ['CARD'] as const;
  /** A charge is captured once: a partial capture releases the rest (docs/connectors.md). */
  readonly capturesOnce = true;
  readonly limits: PartnerConnector['limits'];
  /** One client per secret key (a connected account shares its platform's client). */
  private readonly clients = new Map<string, Promise<Stripe>>();
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
  private async account(entityId: string): Promise<{ stripe: Stripe; opts: Stripe.RequestOptions }> {
    const a = this.byEntity.get(entityId) ?? (this.options.secretKey ? { secretKey: this.options.secretKey } : undefined);
    if (!a) throw new Error(`partner ${this.name} has no Stripe account for entity ${entityId}`);
    return { stripe: await this.client(a.secretKey), opts: a.stripeAccount ? { stripeAccount: a.stripeAccount } : {} };
  }

  /** Any client, for what needs no account (verifying a webhook's signature). */
  private anyClient(): Promise<Stripe> {
    return this.client(this.options.secretKey ?? [...this.byEntity.values()][0]!.secretKey);
  }

  /** The stripe package is loaded on first use: a payd without a Stripe partner never loads it. */
  private client(secretKey: string): Promise<Stripe> {
    let client = this.clients.get(secretKey);
    if (client) return client;
    client = import('stripe').then(({ default: StripeClient }) => {
      const base = new URL(this.options.apiBase ?? 'https://api.stripe.com');
      return new StripeClient(secretKey, {
        host: base.hostname,
        port: base.port || (base.protocol === 'https:' ? 443 : 80),
        protocol: base.protocol === 'https:' ? 'https' : 'http',
        maxNetworkRetries: 0,
        timeout: this.options.timeoutMs ?? 30_000,
        telemetry: false,
      });
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
      source = testToken(this.testMode(req.entityId), req.instrument)
        ?? (await stripe.tokens.create(tokenParams(req.instrument), { ...opts, idempotencyKey: `${req.key}:token` })).id;
    } catch (err) {
      const known = refusal(err);
      if (known) return { ...known, card: req.card };
      throw err;
    }
    try {
      // A card to keep: attached to a Customer first (Stripe refuses a declined card there), then that customer's card charged.
      const customer = req.save_token
        ? await stripe.customers.create(customerParams(req, source), { ...opts, idempotencyKey: `${req.key}:customer` })
        : undefined;
      const charge = await stripe.charges.create(authorizationParams(req, customer ? { customer } : { source }), { ...opts, idempotencyKey: req.key });
      return authorizationResult(charge, req.card);
    } catch (err) {
      const known = refusal(err);
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
      if (!refusal(err)) throw err;
    }
    if (!saved) return invalid;
    try {
      const charge = await stripe.charges.create(savedCardChargeParams(req, saved, instrument), { ...opts, idempotencyKey: req.key });
      return authorizationResult(charge, req.card);
    } catch (err) {
      const known = refusal(err);
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
      return capturedResult(charge, `Captured ${req.amount}`);
    } catch (err) {
      if (stripeError(err)?.code === 'charge_already_captured') {
        return { outcome: 'REFUSED', partner_status: 'charge_already_captured', status_code: 'AMOUNT_NOT_AVAILABLE',
          partner_status_description: 'Stripe captures a charge once: a partial capture released the rest' };
      }
      const known = refusal(err);
      if (known) return known;
      throw err;
    }
  }

  async refund(req: FollowUpRequest): Promise<PartnerResult> {
    const { stripe, opts } = await this.account(req.entityId);
    try {
      const refund = await stripe.refunds.create({ charge: req.authorization_reference, amount: req.amount, metadata: { payd_key: req.key } }, { ...opts, idempotencyKey: req.key });
      return refundResult(refund);
    } catch (err) {
      const known = refusal(err);
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
    let charge: Stripe.Charge;
    try {
      charge = await stripe.charges.retrieve(req.authorization_reference, {}, opts);
    } catch (err) {
      const known = refusal(err);
      if (known) return known;
      throw err;
    }
    const held = heldOf(charge);
    if (!held.open) {
      if (req.amount <= held.released) return releasedResult(charge, 'The uncaptured amount is released');
      return { outcome: 'REFUSED', partner_status: 'charge_already_captured', status_code: 'AMOUNT_NOT_AVAILABLE', partner_status_description: `Only ${held.released} is left uncaptured` };
    }
    try {
      const refund = await stripe.refunds.create({ charge: charge.id, metadata: { payd_key: req.key } }, { ...opts, idempotencyKey: req.key });
      return refundResult(refund);
    } catch (err) {
      const known = refusal(err);
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
        const found = list.data.find((c) => paydKey(c) === req.key);
        if (found) return authorizationResult(found, undefined);
        if (!list.has_more || list.data.length === 0) return 'NOT_FOUND';
        startingAfter = list.data.at(-1)!.id;
      }
      return 'NOT_FOUND';
    }
    if (!ctx?.authorization_reference) return 'NOT_FOUND';
    if (req.kind === 'CAPTURE') {
      const charge = await stripe.charges.retrieve(ctx.authorization_reference, {}, opts);
      return charge.captured ? capturedResult(charge) : 'NOT_FOUND';
    }
    const refunds = await stripe.refunds.list({ charge: ctx.authorization_reference, limit: 100 }, opts);
    const refund = refunds.data.find((r) => paydKey(r) === req.key);
    if (refund) return refundResult(refund);
    if (req.kind === 'VOID') {
      // A void after a capture made no call: the hold is released when the charge is captured.
      const charge = await stripe.charges.retrieve(ctx.authorization_reference, {}, opts);
      if (charge.captured) return releasedResult(charge);
    }
    return 'NOT_FOUND';
  }

  /**
   * Stripe's signed webhooks (Stripe-Signature, verified with the endpoint's signing
   * secret and a 5-minute tolerance by the stripe package), read by notificationsOf
   * (stripe-mappings.ts). Other events are acknowledged and ignored.
   */
  async notification(rawBody: string, headers: Record<string, string | string[] | undefined>): Promise<PartnerNotification[] | 'UNVERIFIED'> {
    const header = headers['stripe-signature'];
    const secrets = this.webhookSecrets;
    if (secrets.length === 0 || typeof header !== 'string') return 'UNVERIFIED';
    const stripe = await this.anyClient();
    // The endpoint's secret signed it: one of the default endpoint's and each account's.
    for (const secret of secrets) {
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(rawBody, header, secret);
      } catch {
        continue; // another account's endpoint, or forged
      }
      return notificationsOf(event);
    }
    return 'UNVERIFIED';
  }
}
