// Template (docs/connector-template/README.md): the mappings of the Acme connector, pure
// functions: payd's request -> Acme's request, Acme's answer -> payd's outcome. ADAPT: use
// the partner SDK's own types when it has one (as stripe-mappings.ts uses the stripe
// package's Stripe.Charge, Stripe.ChargeCreateParams, ...); declare them here only when
// the partner publishes none.
import type { AuthorizeRequest, PartnerNotification, PartnerResult } from '../../src/partners/port.ts';

/** ADAPT: the partner's own object for a payment or an operation. */
export interface AcmeObject { id: string; status: string; amount: number; decline_code?: string; metadata?: { payd_key?: string } }

/** payd's key is kept on the partner's object so that sync and notifications find the call. */
export function authorizationBody(req: AuthorizeRequest): Record<string, unknown> {
  return { amount: req.amount, currency: req.currency, capture: false, card: req.instrument, metadata: { payd_key: req.key, payd_entity: req.entityId } };
}

/** ADAPT: map every status the partner documents; an unknown one is PENDING (a later sync says more). */
export function resultOf(o: AcmeObject, success: string): PartnerResult {
  const base = { partner_reference: o.id, partner_status: o.status };
  if (o.status === success) return { ...base, outcome: 'SUCCESS', status_code: 'SUCCEEDED' };
  if (o.status === 'declined') return { ...base, outcome: 'REFUSED', status_code: (o.decline_code ?? 'DECLINED').toUpperCase() };
  if (o.status === 'invalid') return { ...base, outcome: 'ERROR', status_code: 'INVALID_REQUEST' };
  return { ...base, outcome: 'PENDING', status_code: 'PENDING' };
}

/** ADAPT: a verified event as the calls it settles (by payd's key). */
export function notificationsOf(event: { type: string; object: AcmeObject }): PartnerNotification[] {
  const key = event.object.metadata?.payd_key;
  if (!key) return [];
  return [{ key, result: resultOf(event.object, event.type === 'payment.authorized' ? 'authorized' : 'succeeded') }];
}
