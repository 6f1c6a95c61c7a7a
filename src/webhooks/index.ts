// Webhooks: transactional outbox, signed deliveries with retries, delivery log.
// (Placeholder wired into app.ts; the webhooks work fills it in.)
import type { FastifyInstance } from 'fastify';
import type { Db } from '../platform/db/index.ts';

export interface WebhooksDeps {
  db: Db;
}

/** Routes of the webhooks module (operator delivery log and replay). */
export async function webhooksRoutes(_app: FastifyInstance, _deps: WebhooksDeps): Promise<void> {}
