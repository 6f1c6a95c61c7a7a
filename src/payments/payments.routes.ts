// HTTP wiring of payments and their operations: schema, auth, call the service.
import { operationDescription, operationOf } from './transitions.ts';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { type IdempotencyKeys, idempotencyHeaders, markCreated, requestFingerprint } from '../platform/http/idempotency.ts';
import { IdParams, NoBody, problemResponses, Uuid } from '../platform/http/schemas.ts';
import { problems } from '../platform/http/problem.ts';
import { CaptureBody, CreatePaymentBody, RefundBody, VoidBody } from './payments.schemas.ts';
import type { CreatePaymentBody as CreatePaymentInput, OperationBody } from './payments.schemas.ts';
import type { PaymentsService } from './payments.service.ts';
import type { OperationsService } from './operations.service.ts';
import type { OperationKindOf, OperationName } from './transitions.ts';

type OperationKind = OperationKindOf<OperationName>;
import { paymentJson } from './payment-json.ts';
import type { PaymentViewT } from './payments.service.ts';
import { allowedLagMs, type ReadRouter } from '../platform/db/reads.ts';

const bearer = { schemes: ['bearer' as const], scope: 'payment-api' };
const tags = ['Payments'];
const security = [{ bearerAuth: [] }];

const IdempotencyHeaders = idempotencyHeaders('One key per operation (1-255 printable ASCII characters), scoped to the payment (to the entity for a creation). ' +
  'A key already processed is answered 409 write-conflict with resource_id (the payment, or the capture, refund or void the first call created) ' +
  'and same_request: true for a retry of the first request, false for another request reusing the key (another body, or one that is not valid or not JSON at all).');

const CacheHeaders = Type.Object({
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
function sendPayment(reply: FastifyReply, payment: object | string) {
  return reply.type('application/json; charset=utf-8').send(typeof payment === 'string' ? payment : paymentJson(payment));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The scope of an operation's key: its payment (a well-formed id only). */
function paymentScope(request: { params: unknown }): string | undefined {
  const id = (request.params as { id?: unknown }).id;
  return typeof id === 'string' && UUID.test(id) ? `payment:${id.toLowerCase()}` : undefined;
}

export async function paymentsRoutes(root: FastifyInstance, { payments, operations, reads, idempotency }:
  { payments: PaymentsService; operations: OperationsService; reads: ReadRouter; idempotency: IdempotencyKeys }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const path = (url: string) => url.split('?')[0]!;
  // Keys (docs/decisions.md, Idempotency): of a creation, scoped to the entity; of a
  // capture, refund or void, to the payment (the key that created it counts there too).
  // The payment and its operations keep their key and the request's fingerprint in their
  // own rows (ownKey): a keyed request claims nothing first.
  const creationKeys = idempotency.route({ scope: () => 'payments', ownKey: true, lookup: (entityId, _scope, key) => payments.firstWithKey(entityId, key) });
  const operationKeys = idempotency.route({
    scope: paymentScope, ownKey: true,
    lookup: (entityId, scope, key) => operations.firstWithKey(entityId, scope.slice('payment:'.length), key),
  });

  app.post('/v2/payments', {
    config: { auth: { schemes: ['bearer', 'apiKey'], scope: 'payment-api' }, ...creationKeys.config },
    preHandler: creationKeys.preHandler,
    onSend: creationKeys.onSend,
    schema: {
      tags, summary: 'Create a payment',
      description: 'Authorizes the amount across the split (gift cards first, cards last). The outcome is in authorization.status: ' +
        'AUTHORIZED, REFUSED, ERROR, or PENDING with authorization.redirection for a 3-D Secure challenge.',
      security: [{ bearerAuth: [] }, { apiKey: [] }],
      headers: IdempotencyHeaders,
      body: CreatePaymentBody,
      response: {
        200: Type.Ref('Payment'),
        404: NoBody('client_session_id names no client session of this entity (no body)'),
        ...problemResponses(400, 401, 403, 409, 413, 415),
      },
    },
  }, async (request, reply) => {
    const view = await payments.create(entityOf(request), request.body as CreatePaymentInput, request.headers['x-idempotency-key'], path(request.url),
      requestFingerprint(request));
    markCreated(request, view.id);
    return sendPayment(reply, view);
  });

  app.get('/v2/payments/:id', {
    config: { auth: bearer },
    schema: {
      tags, security, summary: 'Get a payment',
      description: 'Asks the partners about pending transactions first, unless Cache-Control carries max-age.',
      params: IdParams,
      headers: CacheHeaders,
      response: { 200: Type.Ref('Payment'), 404: NoBody('No such payment for this entity (no body)'), ...problemResponses(400, 401, 403, 409) },
    },
  }, async (request, reply) => {
    if (!hasMaxAge(request.headers['cache-control'])) return sendPayment(reply, await payments.get(entityOf(request), request.params.id));
    // Stored data: the JSON text as last served for this version of the payment, from the
    // read replica when it is no staler than max-age (docs/operations.md, Read replicas).
    const entity = entityOf(request);
    const text = await reads.read(allowedLagMs(request.headers['cache-control'], 0), (q) => payments.findStoredJson(entity, request.params.id, q));
    if (text === undefined) throw problems.notFoundNoBody();
    return sendPayment(reply, text);
  });

  const operation = (kind: OperationKind, suffix: string, body: typeof CaptureBody | typeof RefundBody | typeof VoidBody, summary: string) =>
    app.post(`/v2/payments/:id/${suffix}`, {
      config: { auth: bearer, ...operationKeys.config },
      preHandler: operationKeys.preHandler,
      onSend: operationKeys.onSend,
      schema: {
        tags, security, summary,
        description: `${operationDescription(operationOf(kind))} Answers the Payment with the x-created-operation-id header naming the new operation. ` +
          'A payment takes at most PAYD_MAX_OPERATIONS_PER_PAYMENT operations (captures, refunds and voids together, default 200); ' +
          'the next one is a 400 problem of type urn:eu.service:operation-limit-reached with max_operations.',
        params: IdParams,
        headers: IdempotencyHeaders,
        body,
        response: { 200: Type.Ref('Payment'), ...problemResponses(400, 401, 403, 404, 409, 413, 415) },
      },
      // The body is optional for refunds and voids: none means "the whole available amount".
      preValidation: async (request) => {
        if (kind !== 'CAPTURE' && (request.body === undefined || request.body === null)) request.body = {};
      },
    }, async (request, reply) => {
      const result = await operations.run(kind, entityOf(request), request.params.id, (request.body ?? {}) as OperationBody, {
        idempotencyKey: request.headers['x-idempotency-key'],
        fingerprint: requestFingerprint(request),
        instance: path(request.url),
      });
      reply.header('x-created-operation-id', result.operationId);
      markCreated(request, result.operationId);
      return sendPayment(reply, result.payment);
    });

  app.get('/v2/payments/:id/operations/:operation_id', {
    config: { auth: bearer },
    schema: {
      tags, security, summary: 'Get a capture, refund or void',
      description: 'The operation that x-created-operation-id (or the resource_id of a 409) names, with its kind: ' +
        '"reading it back gives the outcome of the first call". Like GET /v2/payments/{id}, partners are asked about ' +
        'pending transactions first unless Cache-Control carries max-age.',
      params: Type.Object({ id: Uuid(), operation_id: Uuid() }),
      headers: CacheHeaders,
      response: { 200: Type.Ref('PaymentOperation'), 404: NoBody('No such payment or operation for this entity (no body)'), ...problemResponses(400, 401, 403, 409) },
    },
  }, async (request) => {
    const entity = entityOf(request);
    const operationOf = (view: PaymentViewT | undefined) => {
      for (const [kind, list] of [['CAPTURE', view?.captures ?? []], ['REFUND', view?.refunds ?? []], ['VOID', view?.voids ?? []]] as const) {
        const found = list.find((o) => o.id === request.params.operation_id);
        if (found) return { kind, payment_id: view!.id, ...found };
      }
      return undefined;
    };
    // With max-age: as stored, from the replica when fresh enough; an operation not there
    // yet is looked for on the primary (reads.read).
    const found = hasMaxAge(request.headers['cache-control'])
      ? await reads.read(allowedLagMs(request.headers['cache-control'], 0), async (q) => operationOf(await payments.findStored(entity, request.params.id, q)))
      : operationOf(await payments.get(entity, request.params.id));
    if (found) return found;
    throw problems.notFoundNoBody();
  });

  operation('CAPTURE', 'captures', CaptureBody, 'Capture (part of) the authorized amount');
  operation('REFUND', 'refunds', RefundBody, 'Refund (part of) the captured amount');
  operation('VOID', 'voids', VoidBody, 'Void (part of) the uncaptured authorized amount');
}
