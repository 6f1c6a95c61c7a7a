// A payment's captures, refunds and voids (POST, keyed) and reading one back
// (payments.routes.ts registers them after the payment's own routes).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { markCreated, requestFingerprint } from '../platform/http/idempotency.ts';
import { IdParams, NoBody, problemResponses, Uuid } from '../platform/http/schemas.ts';
import { problems } from '../platform/http/problem.ts';
import { allowedLagMs } from '../platform/db/reads.ts';
import { operationDescription, operationOf, type OperationKindOf, type OperationName } from './transitions.ts';
import { CaptureBody, RefundBody, VoidBody } from './payments.schemas.ts';
import type { OperationBody } from './payments.schemas.ts';
import type { PaymentViewT } from './payments.service.ts';
import { bearer, CacheHeaders, hasMaxAge, IdempotencyHeaders, path, security, sendPayment, tags } from './payments.common.ts';
import type { PaymentRouteDeps } from './payments.routes.ts';

type OperationKind = OperationKindOf<OperationName>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The scope of an operation's key: its payment (a well-formed id only). */
function paymentScope(request: { params: unknown }): string | undefined {
  const id = (request.params as { id?: unknown }).id;
  return typeof id === 'string' && UUID.test(id) ? `payment:${id.toLowerCase()}` : undefined;
}

export async function operationRoutes(root: FastifyInstance, { payments, operations, reads, idempotency }: PaymentRouteDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const operationKeys = idempotency.route({
    scope: paymentScope, ownKey: true,
    lookup: (entityId, scope, key) => operations.firstWithKey(entityId, scope.slice('payment:'.length), key),
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
