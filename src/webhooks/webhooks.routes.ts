// Operator API of webhooks: an entity's default endpoint and signing secret, the
// delivery log of its events, and replays. Authenticated by the operator token.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { problemResponses } from '../platform/http/schemas.ts';
import type { WebhooksService } from './webhooks.service.ts';
import {
  EntityParams, EventListQuery, EventParams, RotateSecretBody, WebhookDelivery, WebhookEndpoint, WebhookEndpointBody,
  WebhookEvent, WebhookEventList, WebhookSecret,
} from './webhooks.schemas.ts';

const auth = { schemes: ['admin' as const] };
const tags = ['Operator'];
const security = [{ operatorToken: [] }];
const SIGNING = 'Calls carry payd-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>; see docs/webhooks.md.';

export async function webhooksOperatorRoutes(root: FastifyInstance, { service }: { service: WebhooksService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const base = '/admin/v1/entities/:id';

  app.put(`${base}/webhook-endpoint`, {
    config: { auth },
    schema: {
      tags, security, summary: "Set an entity's default webhook endpoint",
      description: 'Events without a target of their own (payment events of payments not made through a link with a webhook) ' +
        'are POSTed here, with the extra headers. The first call also creates the entity\'s signing secret and returns it ' +
        `once in \`secret\` (later: GET ${base}/webhook-secret). Every later attempt, including retries of pending deliveries, goes to the new URL. ${SIGNING}`,
      params: EntityParams,
      body: WebhookEndpointBody,
      response: { 200: WebhookEndpoint, ...problemResponses(400, 401, 404, 413, 415) },
    },
  }, async (request) => service.putEndpoint(request.params.id, request.body.url, request.body.headers));

  app.get(`${base}/webhook-endpoint`, {
    config: { auth },
    schema: {
      tags, security, summary: "Get an entity's default webhook endpoint",
      description: '404 when the entity has none.',
      params: EntityParams,
      response: { 200: WebhookEndpoint, ...problemResponses(400, 401, 404) },
    },
  }, async (request) => service.getEndpoint(request.params.id));

  app.delete(`${base}/webhook-endpoint`, {
    config: { auth },
    schema: {
      tags, security, summary: "Remove an entity's default webhook endpoint",
      description: 'Later events without a target of their own are kept but not sent (status NO_DESTINATION); attempts of pending deliveries to the endpoint fail (no destination) and are retried until one is set again or they give up.',
      params: EntityParams,
      response: { 204: Type.Null({ description: 'Removed' }), ...problemResponses(400, 401, 404) },
    },
  }, async (request, reply) => {
    await service.deleteEndpoint(request.params.id);
    return reply.code(204).send(null);
  });

  app.get(`${base}/webhook-secret`, {
    config: { auth },
    schema: {
      tags, security, summary: "Reveal an entity's webhook signing secret",
      description: 'Created on first use (here, on the first endpoint, or on the first delivery). It is stored encrypted ' +
        `with the master key, so the operator can read it again to hand it to the merchant. ${SIGNING}`,
      params: EntityParams,
      response: { 200: WebhookSecret, ...problemResponses(400, 401, 404) },
    },
  }, async (request) => service.revealSecret(request.params.id));

  app.post(`${base}/webhook-secret/rotate`, {
    config: { auth },
    schema: {
      tags, security, summary: "Rotate an entity's webhook signing secret",
      description: 'The new secret is in this response. Calls are signed with it at once; the previous secret keeps ' +
        'signing as a second v1 signature for previous_secret_valid_seconds (default 24 h) so that receivers can switch.',
      params: EntityParams,
      body: RotateSecretBody,
      response: { 200: WebhookSecret, ...problemResponses(400, 401, 404, 413, 415) },
    },
    preValidation: async (request) => {
      if (request.body === undefined || request.body === null) request.body = {};
    },
  }, async (request) => service.rotateSecret(request.params.id, request.body.previous_secret_valid_seconds ?? 86400));

  app.get(`${base}/webhook-events`, {
    config: { auth },
    schema: {
      tags, security, summary: "List an entity's webhook events with their delivery state",
      description: 'Newest first, cursor pagination (starting_after = next_cursor of the previous page). Filter by type or by the status of the newest delivery.',
      params: EntityParams,
      querystring: EventListQuery,
      response: { 200: WebhookEventList, ...problemResponses(400, 401, 404) },
    },
  }, async (request) => {
    const q = request.query;
    return service.listEvents(request.params.id, Number(q.limit ?? 20), { type: q.type, status: q.status, after: q.starting_after });
  });

  app.get(`${base}/webhook-events/:event_id`, {
    config: { auth },
    schema: {
      tags, security, summary: 'Get a webhook event with its deliveries and every attempt',
      description: 'The delivery log: for each attempt its time, duration, HTTP status, error and the start of the response body.',
      params: EventParams,
      response: { 200: WebhookEvent, ...problemResponses(400, 401, 404) },
    },
  }, async (request) => service.getEvent(request.params.id, request.params.event_id));

  app.post(`${base}/webhook-events/:event_id/replay`, {
    config: { auth },
    schema: {
      tags, security, summary: 'Replay a webhook event',
      description: "A new delivery of the same event (same id, type, created_at and data), due at once, with a fresh retry window. It goes to the event's own URL, or else to the entity's endpoint as set now. 409 when there is neither.",
      params: EventParams,
      response: { 202: WebhookDelivery, ...problemResponses(400, 401, 404, 409) },
    },
  }, async (request, reply) => reply.code(202).send((await service.replay(request.params.id, request.params.event_id))!));
}
