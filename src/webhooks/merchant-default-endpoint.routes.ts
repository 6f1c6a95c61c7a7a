// The singular /v2/webhook-endpoint routes (deprecated): set, get, remove the entity's
// default endpoint and rotate the entity's secret, which it signs with
// (merchant-endpoint.routes.ts assembles).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { problemResponses } from '../platform/http/schemas.ts';
import { idempotencyHeaders, markCreated } from '../platform/http/idempotency.ts';
import { RotateSecretBody, WebhookEndpoint, WebhookEndpointBody, WebhookSecret } from './webhooks.schemas.ts';
import { auth, security, SIGNING, tags } from './merchant-endpoint.common.ts';
import type { MerchantEndpointDeps } from './merchant-endpoint.routes.ts';

const DEPRECATED = 'Deprecated: use /v2/webhook-endpoints. This route manages the entity\'s default endpoint (is_default in /v2/webhook-endpoints), which receives every event type and signs with the entity\'s secret. ';

export async function merchantDefaultEndpointRoutes(root: FastifyInstance, { service, idempotency }: MerchantEndpointDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  // Only the rotation takes a key: PUT and DELETE are idempotent by nature (the same call twice is the same change).
  const rotationKeys = idempotency.route({ scope: () => 'webhook-secret' });

  app.put('/v2/webhook-endpoint', {
    config: { auth },
    schema: {
      tags, security, deprecated: true, summary: 'Set your webhook endpoint',
      description: DEPRECATED + 'Events without a target of their own (every event but those of a payment link with a webhook) are POSTed here, ' +
        'with the extra headers (their values are stored sealed and shown masked). When no signing secret exists yet, this call ' +
        'creates it and returns it once in `secret`; otherwise `secret` is absent (rotate it to get a new one). ' +
        `Every later attempt, retries of pending deliveries included, goes to the new URL. ${SIGNING}`,
      body: WebhookEndpointBody,
      response: { 200: WebhookEndpoint, ...problemResponses(400, 401, 403, 413, 415) },
    },
  }, async (request) => service.putEndpoint(entityOf(request), request.body.url, request.body.headers));

  app.get('/v2/webhook-endpoint', {
    config: { auth },
    schema: {
      tags, security, deprecated: true, summary: 'Get your webhook endpoint',
      description: DEPRECATED + 'Header values are masked. 404 when none is set.',
      response: { 200: WebhookEndpoint, ...problemResponses(401, 403, 404) },
    },
  }, async (request) => service.getEndpoint(entityOf(request)));

  app.delete('/v2/webhook-endpoint', {
    config: { auth },
    schema: {
      tags, security, deprecated: true, summary: 'Remove your webhook endpoint',
      description: DEPRECATED + 'Later events without a target of their own are kept (GET /v2/events) but not sent; pending deliveries are retried until an endpoint is set again or they give up.',
      response: { 204: Type.Null({ description: 'Removed' }), ...problemResponses(401, 403, 404) },
    },
  }, async (request, reply) => {
    await service.deleteEndpoint(entityOf(request));
    return reply.code(204).send(null);
  });

  app.post('/v2/webhook-endpoint/secret/rotate', {
    config: { auth, ...rotationKeys.config },
    preHandler: rotationKeys.preHandler,
    onSend: rotationKeys.onSend,
    schema: {
      tags, security, deprecated: true, summary: 'Rotate your webhook signing secret',
      description: DEPRECATED + 'The new secret is in this answer, once. Calls are signed with it at once; the previous secret keeps ' +
        'signing as a second v1 signature for previous_secret_valid_seconds (default 24 h), so that your receiver can switch.',
      headers: idempotencyHeaders('One key per rotation (1-255 visible ASCII characters, no space), scoped to the entity. A key already processed ' +
        'rotates nothing: 409 write-conflict with resource_id (your entity id: the secret it rotated is shown only in the first answer; ' +
        'if that answer was lost, rotate again with a new key) and same_request (true for a retry of the first request).'),
      body: RotateSecretBody,
      response: { 200: WebhookSecret, ...problemResponses(400, 401, 403, 409, 413, 415) },
    },
    preValidation: async (request) => {
      if (request.body === undefined || request.body === null) request.body = {};
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const rotated = await service.rotateSecret(entityOf(request), request.body.previous_secret_valid_seconds ?? 86400);
    markCreated(request, rotated.entity_id);
    return rotated;
  });
}
