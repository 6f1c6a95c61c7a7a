// What the payment API's route files share (payments.routes.ts, operations.routes.ts):
// credentials and tags, the idempotency and Cache-Control headers, and the one way a
// payment is answered.
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { idempotencyHeaders } from '../platform/http/idempotency.ts';
import { paymentJson } from './payment-json.ts';

export const bearer = { schemes: ['bearer' as const], scope: 'payment-api' };
export const tags = ['Payments'];
export const security = [{ bearerAuth: [] }];

export const IdempotencyHeaders = idempotencyHeaders('One key per operation (1-255 visible ASCII characters, no space), scoped to the payment (to the entity for a creation). ' +
  'A key already processed is answered 409 write-conflict with resource_id (the payment, or the capture, refund or void the first call created) ' +
  'and same_request: true for a retry of the first request, false for another request reusing the key (another body, or one that is not valid or not JSON at all).');

export const CacheHeaders = Type.Object({
  'cache-control': Type.Optional(Type.String({ maxLength: 200, description: 'With max-age=<seconds>, stored data is served and partners are not asked. ' +
    'The data is at most that many seconds old: with a read replica (DATABASE_READ_URL) it comes from the replica when the replica is provably no staler, ' +
    'else from the primary (the payment at its current version); max-age=0 always reads the primary' })),
});

export function hasMaxAge(cacheControl: string | undefined): boolean {
  return /(^|,)\s*max-age\s*=\s*\d+\s*(,|$)/i.test(cacheControl ?? '');
}

/**
 * Answers a payment with its JSON text as written by paymentJson (the Payment schema's
 * serializer, the same text its webhook event carries), not serialized a second time.
 * `payment`: the view, or the text already written (a stored view).
 */
export function sendPayment(reply: FastifyReply, payment: object | string) {
  return reply.type('application/json; charset=utf-8').send(typeof payment === 'string' ? payment : paymentJson(payment));
}

/** The request's path, without its query string (a problem's instance). */
export const path = (url: string) => url.split('?')[0]!;
