// The dashboard's webhook pages (admins; docs/dashboard.md "Webhooks"), on the same
// WebhooksService as the API: the Webhooks page with every endpoint of the entity, the
// form that adds one and the delivery log (webhook-endpoints.routes.ts); an endpoint's
// page with its events, status, rotation, test event and delete (webhook-endpoints-one);
// an event's page and Replay (webhook-endpoints-events). Each action is recorded with the
// admin's email (DashboardService.recordAction).
import type { FastifyInstance } from 'fastify';
import type { ActionLog, WebhookPageDeps } from './webhook-endpoints.common.tsx';
import { webhookEndpointListRoutes } from './webhook-endpoints.routes.ts';
import { webhookEndpointRoutes } from './webhook-endpoints-one.routes.ts';
import { webhookEventRoutes } from './webhook-endpoints-events.routes.ts';

export type { WebhookPageDeps } from './webhook-endpoints.common.tsx';

export async function webhookPageRoutes(app: FastifyInstance, deps: WebhookPageDeps) {
  const actions: ActionLog = {
    record: (by, action, opts = {}) => deps.dashboard.recordAction({
      entity_id: by.entityId, user_id: by.userId, user_email: by.email, action, payment_id: null, idempotency_key: opts.key ?? null, amount: null,
    }, opts.q),
  };
  const routeDeps = { ...deps, actions };
  await webhookEndpointListRoutes(app, routeDeps);
  await webhookEndpointRoutes(app, routeDeps);
  await webhookEventRoutes(app, routeDeps);
}
