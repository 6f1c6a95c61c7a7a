// /v2/webhook-endpoints, the resource: create (the secret shown once), list, get, update,
// delete an endpoint of the merchant's entity (merchant-endpoint.routes.ts assembles).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { IdParams, problemResponses } from '../platform/http/schemas.ts';
import { idempotencyHeaders, markCreated } from '../platform/http/idempotency.ts';
import { MAX_ENDPOINTS_PER_ENTITY } from './webhooks.service.ts';
import {
  WebhookEndpointCreateBody, WebhookEndpointCreated, WebhookEndpointItem, WebhookEndpointList, WebhookEndpointListQuery, WebhookEndpointUpdateBody,
} from './webhooks.schemas.ts';
import { auth, security, SIGNING, tags, view } from './merchant-endpoint.common.ts';
import type { MerchantEndpointDeps } from './merchant-endpoint.routes.ts';

export async function merchantEndpointsRoutes(root: FastifyInstance, { service, idempotency }: MerchantEndpointDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const creationKeys = idempotency.route({ scope: () => 'webhook-endpoints' });

  app.post('/v2/webhook-endpoints', {
    config: { auth, ...creationKeys.config },
    preHandler: creationKeys.preHandler,
    onSend: creationKeys.onSend,
    schema: {
      tags, security, summary: 'Create a webhook endpoint',
      description: 'Every later event of the entity whose type is in enabled_events (default ["*"]: every type) is POSTed to url, ' +
        'with the extra headers (their values are stored sealed and shown masked), signed with the endpoint\'s own secret, ' +
        `returned in this answer only. At most ${MAX_ENDPOINTS_PER_ENTITY} endpoints per entity (409 beyond). ${SIGNING}`,
      headers: idempotencyHeaders('One key per endpoint to create (1-255 visible ASCII characters, no space), scoped to the entity. A key already ' +
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
}
