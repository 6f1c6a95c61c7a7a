// The merchant's own webhook endpoints, with the payment API's credentials (an access
// token of its API key; the SDK's webhookEndpoints methods): /v2/webhook-endpoints
// creates, lists, reads, updates, deletes them (merchant-endpoints.routes.ts), rotates
// each one's signing secret and sends a test event (merchant-endpoint-actions.routes.ts),
// at most MAX_ENDPOINTS_PER_ENTITY per entity (docs/webhooks.md). Each endpoint's secret
// is shown once: in the answer that created it and in each rotation's. The singular
// /v2/webhook-endpoint routes (deprecated; merchant-default-endpoint.routes.ts) manage the
// entity's default endpoint, which signs with the entity's secret, as before migration 0051.
// POST /v2/events/{id}/resend (merchant-event-resend.routes.ts) sends one of the entity's events again.
import type { FastifyInstance } from 'fastify';
import type { IdempotencyKeys } from '../platform/http/idempotency.ts';
import type { WebhooksService } from './webhooks.service.ts';
import { merchantEndpointsRoutes } from './merchant-endpoints.routes.ts';
import { merchantEndpointActionRoutes } from './merchant-endpoint-actions.routes.ts';
import { merchantDefaultEndpointRoutes } from './merchant-default-endpoint.routes.ts';
import { merchantEventResendRoutes } from './merchant-event-resend.routes.ts';

export interface MerchantEndpointDeps {
  service: WebhooksService;
  idempotency: IdempotencyKeys;
}

export async function merchantWebhookRoutes(app: FastifyInstance, deps: MerchantEndpointDeps) {
  await merchantEndpointsRoutes(app, deps);
  await merchantEndpointActionRoutes(app, deps);
  await merchantDefaultEndpointRoutes(app, deps);
  await merchantEventResendRoutes(app, deps);
}
