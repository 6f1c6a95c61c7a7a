// HTTP wiring of payments and their operations: schema, auth, call the service. Here the
// payment (create, get); its captures, refunds and voids in operations.routes.ts; what
// both use in payments.common.ts.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { type IdempotencyKeys, markCreated, requestFingerprint } from '../platform/http/idempotency.ts';
import { IdParams, NoBody, problemResponses } from '../platform/http/schemas.ts';
import { problems } from '../platform/http/problem.ts';
import { CreatePaymentBody } from './payments.schemas.ts';
import type { CreatePaymentBody as CreatePaymentInput } from './payments.schemas.ts';
import type { PaymentsService } from './payments.service.ts';
import type { OperationsService } from './operations.service.ts';
import { allowedLagMs, type ReadRouter } from '../platform/db/reads.ts';
import { bearer, CacheHeaders, hasMaxAge, IdempotencyHeaders, path, security, sendPayment, tags } from './payments.common.ts';
import { operationRoutes } from './operations.routes.ts';

export interface PaymentRouteDeps { payments: PaymentsService; operations: OperationsService; reads: ReadRouter; idempotency: IdempotencyKeys }

export async function paymentsRoutes(root: FastifyInstance, deps: PaymentRouteDeps) {
  const { payments, reads, idempotency } = deps;
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  // Keys (docs/decisions.md, Idempotency): of a creation, scoped to the entity; of a
  // capture, refund or void, to the payment (the key that created it counts there too:
  // operations.routes.ts). The payment and its operations keep their key and the
  // request's fingerprint in their own rows (ownKey): a keyed request claims nothing first.
  const creationKeys = idempotency.route({ scope: () => 'payments', ownKey: true, lookup: (entityId, _scope, key) => payments.firstWithKey(entityId, key) });

  app.post('/v2/payments', {
    config: { auth: { schemes: ['bearer', 'apiKey'], scope: 'payment-api' }, ...creationKeys.config },
    preHandler: creationKeys.preHandler,
    onSend: creationKeys.onSend,
    schema: {
      tags, summary: 'Create a payment',
      description: 'Authorizes the amount across the split (gift cards first, cards last). The outcome is in authorization.status: ' +
        'AUTHORIZED, REFUSED, ERROR, or PENDING with authorization.redirection for a 3-D Secure challenge. ' +
        'The entity\'s eligibility rules hold: a split part they refuse (for the client session\'s order and customer when ' +
        'client_session_id is given, else the payment\'s) is a 400 naming split[i] and the rule that refuses it; nothing is written.',
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

  await operationRoutes(root, deps);
}
