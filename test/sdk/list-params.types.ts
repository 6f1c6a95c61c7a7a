// Compile-time checks of the SDK's list filters (issue 43, item 9), run by the type check
// (`npx tsc --noEmit -p .`): they are derived from openapi.json's query parameters, so a
// filter the API has not, or a value outside a closed set, does not compile; counts and
// amounts are numbers, times Dates or ISO strings, comma lists arrays of their values.
import type { ClientSessionListParams, EventListParams, PaymentLinkListParams, PaymentListParams } from '../../sdk/src/index.ts';

export const typedFilters: Array<PaymentListParams | ClientSessionListParams | PaymentLinkListParams | EventListParams> = [
  { limit: 5, authorization_status: ['AUTHORIZED', 'REFUSED'], captured: 'PARTIALLY', currency: 'EUR', amount_gte: 1000, created_gte: new Date() },
  { limit: '5', authorization_status: 'AUTHORIZED,ERROR', created_lt: '2026-11-01T00:00:00Z', card_last_four: '4242' },
  { status: ['CREATED', 'EXPIRED'], starting_after: '7d3c2f5e-0000-4000-8000-000000000000' } satisfies ClientSessionListParams,
  { status: 'PAID', limit: 100 } satisfies PaymentLinkListParams,
  { limit: 5, type: ['payment.captured', 'payment.refunded'], order: 'asc' } satisfies EventListParams,
];

// @ts-expect-error: not a filter of the payments list
export const unknownFilter: PaymentListParams = { colour: 'red' };
// @ts-expect-error: captured is NOT, PARTIALLY or FULLY
export const badDegree: PaymentListParams = { captured: 'HALF' };
// @ts-expect-error: not an authorization status
export const badStatus: PaymentListParams = { authorization_status: ['PAID'] };
// @ts-expect-error: order is asc or desc
export const badOrder: EventListParams = { order: 'newest' };
// @ts-expect-error: not an event type
export const badType: EventListParams = { type: ['payment.exploded'] };
