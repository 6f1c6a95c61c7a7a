// POST /v2/events/{id}/resend: the merchant sends one of its events again, as the
// operator's replay does (new deliveries of the same event, due at once), to the endpoint
// it names or else wherever the event goes now (merchant-endpoint.routes.ts assembles).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { entityOf } from '../platform/http/auth.ts';
import { IdParams, problemResponses } from '../platform/http/schemas.ts';
import { idempotencyHeaders, markCreated } from '../platform/http/idempotency.ts';
import { EventResendBody, EventResent } from './webhooks.schemas.ts';
import { auth, security } from './merchant-endpoint.common.ts';
import type { MerchantEndpointDeps } from './merchant-endpoint.routes.ts';

export async function merchantEventResendRoutes(root: FastifyInstance, { service, idempotency }: MerchantEndpointDeps) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const resendKeys = idempotency.route({ scope: () => 'event-resend', pathInFingerprint: true });

  app.post('/v2/events/:id/resend', {
    config: { auth, ...resendKeys.config },
    preHandler: resendKeys.preHandler,
    onSend: resendKeys.onSend,
    schema: {
      tags: ['Events'], security, summary: 'Send an event again',
      description: 'New deliveries of the same event (same id, type, created_at and data), due at once, with a fresh retry window: ' +
        'to the endpoint named by webhook_endpoint_id (whatever its enabled_events and status), or else wherever the event goes now: ' +
        'its own URL (a payment link\'s webhook.url), or every enabled endpoint of yours that takes its type. Another entity\'s event or endpoint is 404; ' +
        '409 when the event has no destination.',
      params: IdParams,
      headers: idempotencyHeaders('One key per resend (1-255 visible ASCII characters, no space), scoped to the entity. A key already processed ' +
        'sends nothing more: 409 write-conflict with resource_id (the first delivery it made) and same_request (true for a retry of the first request).'),
      body: EventResendBody,
      response: { 202: EventResent, ...problemResponses(400, 401, 403, 404, 409, 413, 415) },
    },
    preValidation: async (request) => {
      if (request.body === undefined || request.body === null) request.body = {};
    },
  }, async (request, reply) => {
    const resent = await service.resendEvent(entityOf(request), request.params.id, request.body.webhook_endpoint_id);
    markCreated(request, resent.deliveries[0]!.id);
    return reply.code(202).send(resent);
  });
}
