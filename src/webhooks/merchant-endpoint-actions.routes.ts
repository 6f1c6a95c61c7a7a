// What is done to one of the merchant's endpoints: rotate its signing secret (the new one
// shown once, the previous one signing on for a while) and send it a test event, each
// honouring x-idempotency-key (merchant-endpoint.routes.ts assembles).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { entityOf } from '../platform/http/auth.ts';
import { IdParams, problemResponses } from '../platform/http/schemas.ts';
import { idempotencyHeaders, markCreated } from '../platform/http/idempotency.ts';
import { EndpointSecretRotated, EndpointTestSent, RotateSecretBody } from './webhooks.schemas.ts';
import { auth, security, tags } from './merchant-endpoint.common.ts';
import type { MerchantEndpointDeps } from './merchant-endpoint.routes.ts';

export async function merchantEndpointActionRoutes(root: FastifyInstance, { service, idempotency }: MerchantEndpointDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const endpointRotationKeys = idempotency.route({ scope: () => 'webhook-endpoint-secret', pathInFingerprint: true });
  // Entity-wide like the rotation's, with the endpoint's id in the fingerprint (another endpoint's test is another request).
  const testKeys = idempotency.route({ scope: () => 'webhook-endpoint-test', pathInFingerprint: true });

  app.post('/v2/webhook-endpoints/:id/secret/rotate', {
    config: { auth, ...endpointRotationKeys.config },
    preHandler: endpointRotationKeys.preHandler,
    onSend: endpointRotationKeys.onSend,
    schema: {
      tags, security, summary: 'Rotate a webhook endpoint\'s signing secret',
      description: 'The new secret is in this answer, once. Calls are signed with it at once; the previous secret keeps ' +
        'signing as a second v1 signature for previous_secret_valid_seconds (default 24 h), so that your receiver can switch. ' +
        'The default endpoint\'s secret is the entity\'s: rotating it is the same as POST /v2/webhook-endpoint/secret/rotate.',
      params: IdParams,
      headers: idempotencyHeaders('One key per rotation (1-255 visible ASCII characters, no space), scoped to the entity. A key already processed ' +
        'rotates nothing: 409 write-conflict with resource_id (the endpoint) and same_request.'),
      body: RotateSecretBody,
      response: { 200: EndpointSecretRotated, ...problemResponses(400, 401, 403, 404, 409, 413, 415) },
    },
    preValidation: async (request) => {
      if (request.body === undefined || request.body === null) request.body = {};
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const rotated = await service.rotateEndpointSecret(entityOf(request), request.params.id, request.body.previous_secret_valid_seconds ?? 86400);
    markCreated(request, rotated.endpoint_id);
    return rotated;
  });

  app.post('/v2/webhook-endpoints/:id/test', {
    config: { auth, ...testKeys.config },
    preHandler: testKeys.preHandler,
    onSend: testKeys.onSend,
    schema: {
      tags, security, summary: 'Send a test event to a webhook endpoint',
      description: 'Writes a webhook_endpoint.test event and sends it to this endpoint only (whatever its enabled_events and status), ' +
        'signed and retried like any event. Its delivery log is GET /admin/v1/entities/{id}/webhook-events/{event_id} (operator) or the dashboard.',
      params: IdParams,
      headers: idempotencyHeaders('One key per test event (1-255 visible ASCII characters, no space), scoped to the entity. A key already processed ' +
        'sends nothing more: 409 write-conflict with resource_id (the test event it wrote: GET /v2/events/{id}) and same_request ' +
        '(true for a retry of the first request; false for the key sent with another request, such as a test of another endpoint).'),
      response: { 202: EndpointTestSent, ...problemResponses(400, 401, 403, 404, 409) },
    },
  }, async (request, reply) => {
    const sent = await service.sendTestEvent(entityOf(request), request.params.id);
    markCreated(request, sent.id);
    return reply.code(202).send(sent);
  });
}
