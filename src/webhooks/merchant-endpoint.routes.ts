// The merchant's own webhook endpoints, with the payment API's credentials (an access
// token of its API key; the SDK's webhookEndpoints methods): /v2/webhook-endpoints
// creates, lists, reads, updates, deletes them, rotates each one's signing secret and
// sends a test event, at most MAX_ENDPOINTS_PER_ENTITY per entity (docs/webhooks.md).
// Each endpoint's secret is shown once: in the answer that created it and in each
// rotation's. The singular /v2/webhook-endpoint routes (deprecated) manage the entity's
// default endpoint, which signs with the entity's secret, as before migration 0051.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { problemResponses } from '../platform/http/schemas.ts';
import { type IdempotencyKeys, idempotencyHeaders, markCreated } from '../platform/http/idempotency.ts';
import type { WebhooksService } from './webhooks.service.ts';
import { IdParams } from '../platform/http/schemas.ts';
import { MAX_ENDPOINTS_PER_ENTITY } from './webhooks.service.ts';
import type { EndpointRow } from './webhooks.service.ts';
import {
  EndpointSecretRotated, EndpointTestSent, RotateSecretBody, WebhookEndpoint, WebhookEndpointBody, WebhookEndpointCreateBody,
  WebhookEndpointCreated, WebhookEndpointItem, WebhookEndpointList, WebhookEndpointListQuery, WebhookEndpointUpdateBody, WebhookSecret,
} from './webhooks.schemas.ts';

const auth = { schemes: ['bearer' as const], scope: 'payment-api' };
const tags = ['Webhooks'];
const security = [{ bearerAuth: [] }];
const DEPRECATED = 'Deprecated: use /v2/webhook-endpoints. This route manages the entity\'s default endpoint (is_default in /v2/webhook-endpoints), which receives every event type and signs with the entity\'s secret. ';
const SIGNING = 'Calls carry payd-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>; see docs/webhooks.md.';

export async function merchantWebhookRoutes(root: FastifyInstance, { service, idempotency }: { service: WebhooksService; idempotency: IdempotencyKeys }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  // Only the rotation takes a key: PUT and DELETE are idempotent by nature (the same call twice is the same change).
  const rotationKeys = idempotency.route({ scope: () => 'webhook-secret' });

  const creationKeys = idempotency.route({ scope: () => 'webhook-endpoints' });
  const endpointRotationKeys = idempotency.route({ scope: () => 'webhook-endpoint-secret' });
  const view = <T extends EndpointRow>(e: T) => ({ ...e, object: 'webhook_endpoint' as const });

  app.post('/v2/webhook-endpoints', {
    config: { auth, ...creationKeys.config },
    preHandler: creationKeys.preHandler,
    onSend: creationKeys.onSend,
    schema: {
      tags, security, summary: 'Create a webhook endpoint',
      description: 'Every later event of the entity whose type is in enabled_events (default ["*"]: every type) is POSTed to url, ' +
        'with the extra headers (their values are stored sealed and shown masked), signed with the endpoint\'s own secret, ' +
        `returned in this answer only. At most ${MAX_ENDPOINTS_PER_ENTITY} endpoints per entity (409 beyond). ${SIGNING}`,
      headers: idempotencyHeaders('One key per endpoint to create (1-255 printable ASCII characters), scoped to the entity. A key already ' +
        'processed creates nothing: 409 write-conflict with resource_id (the endpoint it created; its secret was shown only in the first answer) ' +
        'and same_request (true for a retry of the first request).'),
      body: WebhookEndpointCreateBody,
      response: { 200: WebhookEndpointCreated, ...problemResponses(400, 401, 403, 409, 413, 415) },
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const created = await service.createEndpoint(entityOf(request), request.body);
    markCreated(request, created.id);
    return view(created);
  });

  app.get('/v2/webhook-endpoints', {
    config: { auth },
    schema: {
      tags, security, summary: 'List your webhook endpoints',
      description: 'Newest first, with cursor pagination (starting_after = next_cursor). Header values are masked; secrets are not shown.',
      querystring: WebhookEndpointListQuery,
      response: { 200: WebhookEndpointList, ...problemResponses(400, 401, 403) },
    },
  }, async (request) => {
    const page = await service.listEndpoints(entityOf(request), Number(request.query.limit ?? 20), request.query.starting_after);
    return { object: 'list' as const, ...page, data: page.data.map(view) };
  });

  app.get('/v2/webhook-endpoints/:id', {
    config: { auth },
    schema: {
      tags, security, summary: 'Get a webhook endpoint',
      description: 'Header values are masked. 404 for an id that is not one of your endpoints.',
      params: IdParams,
      response: { 200: WebhookEndpointItem, ...problemResponses(400, 401, 403, 404) },
    },
  }, async (request) => view(await service.getEndpointById(entityOf(request), request.params.id)));

  app.patch('/v2/webhook-endpoints/:id', {
    config: { auth },
    schema: {
      tags, security, summary: 'Update a webhook endpoint',
      description: 'Changes the fields given (headers replace the whole list; description null clears it). status disabled stops ' +
        'new events from going to it. Pending retries go to the URL as set at each attempt.',
      params: IdParams,
      body: WebhookEndpointUpdateBody,
      response: { 200: WebhookEndpointItem, ...problemResponses(400, 401, 403, 404, 413, 415) },
    },
  }, async (request) => view(await service.updateEndpoint(entityOf(request), request.params.id, request.body)));

  app.delete('/v2/webhook-endpoints/:id', {
    config: { auth },
    schema: {
      tags, security, summary: 'Delete a webhook endpoint',
      description: 'No event goes to it any more; its pending deliveries end FAILED (no destination) when their retry window closes.',
      params: IdParams,
      response: { 204: Type.Null({ description: 'Deleted' }), ...problemResponses(400, 401, 403, 404) },
    },
  }, async (request, reply) => {
    await service.deleteEndpointById(entityOf(request), request.params.id);
    return reply.code(204).send(null);
  });

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
      headers: idempotencyHeaders('One key per rotation (1-255 printable ASCII characters), scoped to the entity. A key already processed ' +
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
    config: { auth },
    schema: {
      tags, security, summary: 'Send a test event to a webhook endpoint',
      description: 'Writes a webhook_endpoint.test event and sends it to this endpoint only (whatever its enabled_events and status), ' +
        'signed and retried like any event. Its delivery log is GET /admin/v1/entities/{id}/webhook-events/{event_id} (operator) or the dashboard.',
      params: IdParams,
      response: { 202: EndpointTestSent, ...problemResponses(400, 401, 403, 404) },
    },
  }, async (request, reply) => reply.code(202).send(await service.sendTestEvent(entityOf(request), request.params.id)));

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
