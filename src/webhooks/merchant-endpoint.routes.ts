// The merchant's own webhook endpoint, with the payment API's credentials (an access
// token of its API key; the SDK's webhookEndpoint methods): set, read, remove it and
// rotate its signing secret, as the operator API and the dashboard do. One endpoint per
// entity (docs/webhooks.md); the secret is shown once: when the first endpoint creates
// it, and in the answer of each rotation.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { problemResponses } from '../platform/http/schemas.ts';
import { type IdempotencyKeys, idempotencyHeaders, markCreated } from '../platform/http/idempotency.ts';
import type { WebhooksService } from './webhooks.service.ts';
import { RotateSecretBody, WebhookEndpoint, WebhookEndpointBody, WebhookSecret } from './webhooks.schemas.ts';

const auth = { schemes: ['bearer' as const], scope: 'payment-api' };
const tags = ['Webhooks'];
const security = [{ bearerAuth: [] }];
const SIGNING = 'Calls carry payd-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>; see docs/webhooks.md.';

export async function merchantWebhookRoutes(root: FastifyInstance, { service, idempotency }: { service: WebhooksService; idempotency: IdempotencyKeys }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  // Only the rotation takes a key: PUT and DELETE are idempotent by nature (the same call twice is the same change).
  const rotationKeys = idempotency.route({ scope: () => 'webhook-secret' });

  app.put('/v2/webhook-endpoint', {
    config: { auth },
    schema: {
      tags, security, summary: 'Set your webhook endpoint',
      description: 'Events without a target of their own (every event but those of a payment link with a webhook) are POSTed here, ' +
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
      tags, security, summary: 'Get your webhook endpoint',
      description: 'Header values are masked. 404 when none is set.',
      response: { 200: WebhookEndpoint, ...problemResponses(401, 403, 404) },
    },
  }, async (request) => service.getEndpoint(entityOf(request)));

  app.delete('/v2/webhook-endpoint', {
    config: { auth },
    schema: {
      tags, security, summary: 'Remove your webhook endpoint',
      description: 'Later events without a target of their own are kept (GET /v2/events) but not sent; pending deliveries are retried until an endpoint is set again or they give up.',
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
      tags, security, summary: 'Rotate your webhook signing secret',
      description: 'The new secret is in this answer, once. Calls are signed with it at once; the previous secret keeps ' +
        'signing as a second v1 signature for previous_secret_valid_seconds (default 24 h), so that your receiver can switch.',
      headers: idempotencyHeaders('One key per rotation (1-255 printable ASCII characters), scoped to the entity. A key already processed ' +
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
