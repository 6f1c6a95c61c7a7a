// Stripe's mappings (docs/connectors.md): payd's requests as Stripe's parameters, and
// Stripe's objects, errors and events as payd's answers. Pure functions over the stripe
// package's own types (no call is made here: the calls are stripe-connector.ts). Unknown
// statuses are PENDING.
import type Stripe from 'stripe';
import type { AuthorizeRequest, CardDetails, CardInstrument, PartnerNotification, PartnerResult, SavedCardInstrument } from '../port.ts';

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

// ---- payd -> Stripe ----

/** The test token of a documented test number (test mode), else undefined: the card is tokenised (tokenParams). */
export function testToken(testMode: boolean, card: CardInstrument): string | undefined {
  return testMode ? STRIPE_TEST_TOKENS[card.number] : undefined;
}

export function tokenParams(card: CardInstrument): Stripe.TokenCreateParams {
  return {
    card: { number: card.number, exp_month: card.expiry_month, exp_year: card.expiry_year, ...(card.cvv ? { cvc: card.cvv } : {}), ...(card.holder_name ? { name: card.holder_name } : {}) },
  };
}

/** The Customer a card to keep is attached to (Stripe refuses a declined card there). */
export function customerParams(req: AuthorizeRequest, source: string): Stripe.CustomerCreateParams {
  return { source, metadata: { payd_key: req.key, payd_entity: req.entityId } };
}

/** The authorization: a charge not captured, of the card's token or of the Customer the card was attached to. */
export function authorizationParams(req: AuthorizeRequest, paid: { source: string } | { customer: Stripe.Customer }): Stripe.ChargeCreateParams {
  const customer = 'customer' in paid ? paid.customer : undefined;
  const defaultSource = customer ? idOf(customer.default_source) : undefined;
  return {
    amount: req.amount, currency: req.currency.toLowerCase(), capture: false,
    ...(customer ? { customer: customer.id, ...(defaultSource ? { source: defaultSource } : {}) } : { source: (paid as { source: string }).source }),
    metadata: { payd_key: req.key, payd_entity: req.entityId, ...(customer ? { payd_saved: 'true' } : {}) },
  };
}

/** An authorization with a saved card: that customer's card charged again, marked with who initiated it. */
export function savedCardChargeParams(req: AuthorizeRequest, saved: { customer: string; card: string }, instrument: SavedCardInstrument): Stripe.ChargeCreateParams {
  return {
    amount: req.amount, currency: req.currency.toLowerCase(), capture: false, customer: saved.customer, source: saved.card,
    metadata: { payd_key: req.key, payd_entity: req.entityId, payd_initiator: instrument.initiator },
  };
}

// ---- Stripe -> payd ----

function idOf(x: string | { id: string } | null | undefined): string | undefined {
  return typeof x === 'string' ? x : x?.id;
}

/** The Customer and card a charge of a customer's card was made with (Stripe names the customer on the charge, or on its card). */
export function savedCardOf(charge: Stripe.Charge): { customer: string; card: string } | undefined {
  const source = charge.source;
  const customer = idOf(charge.customer) ?? (source && 'customer' in source ? idOf(source.customer) : undefined);
  const card = source?.id;
  return customer && card ? { customer, card } : undefined;
}

/** The payd key a charge or refund carries (metadata payd_key). */
export function paydKey(o: { metadata?: Stripe.Metadata | null }): string | undefined {
  return o.metadata?.payd_key || undefined;
}

const FUNDING: Record<string, string> = { credit: 'CREDIT', debit: 'DEBIT', prepaid: 'PREPAID' };

/** A charge as payd's authorization answer. Unknown statuses are PENDING. */
export function authorizationResult(charge: Stripe.Charge, card: CardDetails | undefined): PartnerResult {
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

export function capturedResult(charge: Stripe.Charge, description?: string): PartnerResult {
  return { outcome: 'SUCCESS', partner_reference: charge.id, partner_status: 'captured', status_code: 'SUCCEEDED', ...(description ? { partner_status_description: description } : {}) };
}

/** The rest of a charge's hold, released by Stripe itself (a captured or fully refunded charge): a void of it needs no call. */
export function releasedResult(charge: Stripe.Charge, description?: string): PartnerResult {
  return { outcome: 'SUCCESS', partner_reference: charge.id, partner_status: 'released', status_code: 'SUCCEEDED', ...(description ? { partner_status_description: description } : {}) };
}

/** What of a charge is still held (neither captured nor released). */
export function heldOf(charge: Stripe.Charge): { captured: number; released: number; open: boolean } {
  const captured = charge.amount_captured ?? (charge.captured ? charge.amount - charge.amount_refunded : 0);
  return { captured, released: charge.amount - captured, open: !charge.captured && charge.amount_refunded < charge.amount };
}

export function refundResult(refund: Stripe.Refund): PartnerResult {
  const base = { partner_reference: refund.id, partner_status: refund.status ?? 'unknown' };
  if (refund.status === 'succeeded') return { ...base, outcome: 'SUCCESS', status_code: 'SUCCEEDED', partner_status_description: 'Refunded' };
  if (refund.status === 'failed' || refund.status === 'canceled') {
    return { ...base, outcome: 'REFUSED', status_code: (refund.failure_reason ?? 'refund_failed').toUpperCase(), partner_status_description: `Stripe refund ${refund.status}` };
  }
  return { ...base, outcome: 'PENDING', status_code: 'PENDING', partner_status_description: `Stripe refund ${refund.status ?? 'without status'}` };
}

/** The fields of a Stripe error the mapping reads (the stripe package's StripeError, or its raw JSON). */
type StripeErrorLike = Partial<Pick<Stripe.errors.StripeError, 'type' | 'rawType' | 'code' | 'decline_code' | 'message' | 'statusCode' | 'charge'>>;

/** Stripe errors whose outcome is known: the request was refused, nothing happened. */
const REFUSING = new Set(['card_error', 'StripeCardError']);
const INVALID = new Set(['invalid_request_error', 'StripeInvalidRequestError']);

export function stripeError(err: unknown): StripeErrorLike | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as StripeErrorLike;
  return typeof e.type === 'string' || typeof e.rawType === 'string' ? e : undefined;
}

/**
 * A Stripe error whose outcome is known (a decline, an invalid request: nothing
 * happened) as payd's answer; undefined for the others (network, 5xx, rate limit,
 * idempotency conflicts), whose outcome is unknown: the caller rethrows and payd keeps
 * the transaction PENDING until a sync.
 */
export function refusal(err: unknown): PartnerResult | undefined {
  const e = stripeError(err);
  if (!e) return undefined;
  const type: string = e.rawType ?? e.type ?? '';
  if (REFUSING.has(type) || REFUSING.has(e.type ?? '')) {
    return { outcome: 'REFUSED', ...(e.charge ? { partner_reference: e.charge } : {}), partner_status: e.code ?? 'card_declined',
      status_code: (e.decline_code ?? e.code ?? 'declined').toUpperCase(), partner_status_description: e.message ?? 'Declined' };
  }
  if ((INVALID.has(type) || INVALID.has(e.type ?? '')) && e.statusCode !== undefined && e.statusCode !== 409 && e.statusCode < 500) {
    return { outcome: 'ERROR', partner_status: e.code ?? 'invalid_request', status_code: (e.code ?? 'INVALID_REQUEST').toUpperCase(), partner_status_description: e.message ?? 'Stripe refused the request' };
  }
  return undefined;
}

/**
 * A verified Stripe event as the notifications payd applies: charge.succeeded / failed /
 * pending / updated settle the authorization whose payd_key the charge carries;
 * charge.captured the pending capture of that charge; charge.refunded (and refund events)
 * the refunds and voids whose payd_key the refunds carry. Other events: none.
 */
export function notificationsOf(event: Stripe.Event): PartnerNotification[] {
  const type: string = event.type;
  if (type.startsWith('charge.refund') || type === 'refund.updated' || type === 'refund.created' || type === 'refund.failed') {
    const refunds = type.startsWith('refund.') ? [event.data.object as Stripe.Refund]
      : ((event.data.object as Stripe.Charge).refunds?.data ?? []);
    return refunds.flatMap((r) => {
      const key = paydKey(r);
      return key ? [{ key, result: refundResult(r) }] : [];
    });
  }
  if (!type.startsWith('charge.')) return [];
  const charge = event.data.object as Stripe.Charge;
  if (type === 'charge.captured') return [{ kind: 'CAPTURE', authorization_reference: charge.id, result: capturedResult(charge) }];
  const key = paydKey(charge);
  if (!key || !['charge.succeeded', 'charge.failed', 'charge.pending', 'charge.updated'].includes(type)) return [];
  return [{ key, kind: 'AUTHORIZATION', result: authorizationResult(charge, undefined) }];
}
