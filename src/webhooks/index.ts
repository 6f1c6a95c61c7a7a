// Webhooks: transactional outbox, signed deliveries with retries, delivery log.
//
// - Other modules record events with enqueueEvent(tx, ...) inside their own transaction
//   (see outbox.ts for how to call it).
// - The dispatcher (roles all and worker; started by main.ts) delivers them.
// - The operator API (roles all and api) sets endpoints, reveals/rotates secrets, reads
//   the delivery log and replays events.
// - verifyWebhookSignature is what merchants use to check payd-signature (docs/webhooks.md).
import type { FastifyInstance } from 'fastify';
import type { Db } from '../platform/db/index.ts';
import { drainBudgetMs } from '../platform/lifecycle.ts';
import { WebhookDispatcher } from './dispatcher.ts';
import { sealPlainHeaders } from './header-seal.ts';
import { WebhookSecrets } from './secrets.ts';
import { WebhooksService } from './webhooks.service.ts';
import { webhooksOperatorRoutes } from './webhooks.routes.ts';
import { merchantWebhookRoutes } from './merchant-endpoint.routes.ts';
import type { IdempotencyKeys } from '../platform/http/idempotency.ts';
import type { Tracer } from '../platform/observability/tracing.ts';

export { enqueueEvent, EVENT_TYPE_PATTERN, type EnqueuedEvent, type NewEvent } from './outbox.ts';
export { signWebhook, verifyWebhookSignature, SIGNATURE_HEADER } from './signature.ts';
export { validateWebhookTarget, type WebhookHeader, type WebhookTarget } from './target.ts';
export { WebhookHeader as WebhookHeaderSchema } from './webhooks.schemas.ts';
export { WebhookDispatcher } from './dispatcher.ts';

export interface Webhooks {
  service: WebhooksService;
  secrets: WebhookSecrets;
  dispatcher: WebhookDispatcher;
}

declare module 'fastify' {
  interface FastifyInstance {
    webhooks: Webhooks;
  }
}

/** The webhook module's settings (config.ts builds them from the environment; Config extends this). */
export interface WebhookSettings {
  /** Webhook retries: the first retry waits this long, then twice as long each time... */
  webhookBackoffBaseMs: number;
  /** ...up to this (before jitter). */
  webhookBackoffMaxMs: number;
  /** A delivery gives up (FAILED) when its next attempt would fall this long after it was created. */
  webhookMaxAgeMs: number;
  /** How often the webhook dispatcher looks for due deliveries. */
  webhookPollMs: number;
  /** A webhook call that takes longer is a failed attempt. */
  webhookTimeoutMs: number;
  /** A claimed delivery whose worker died is due again after this long (longer than the timeout). */
  webhookLeaseMs: number;
  /** Deliver to loopback, private and link-local addresses (default: only on the embedded database). */
  webhookAllowPrivateTargets: boolean;
  /** How long a stopping process lets work in flight finish (PAYD_SHUTDOWN_GRACE_MS). */
  shutdownGraceMs: number;
}

export interface WebhooksDeps {
  db: Db;
  masterKey: Buffer;
  config: WebhookSettings;
  /** Tracing on: delivery attempts are spans. */
  tracer?: Tracer | undefined;
}

/** Creates the module, exposes it as app.webhooks and stops the dispatcher when the app closes. */
export function attachWebhooks(app: FastifyInstance, { db, masterKey, config, tracer }: WebhooksDeps): Webhooks {
  const secrets = new WebhookSecrets(db, masterKey);
  const dispatcher = new WebhookDispatcher(db, secrets, {
    backoffBaseMs: config.webhookBackoffBaseMs,
    backoffMaxMs: config.webhookBackoffMaxMs,
    maxAgeMs: config.webhookMaxAgeMs,
    pollMs: config.webhookPollMs,
    timeoutMs: config.webhookTimeoutMs,
    leaseMs: config.webhookLeaseMs,
    allowPrivateTargets: config.webhookAllowPrivateTargets,
    tracer,
  });
  const webhooks: Webhooks = { service: new WebhooksService(db, secrets, { allowPrivateTargets: config.webhookAllowPrivateTargets }), secrets, dispatcher };
  app.decorate('webhooks', webhooks);
  // The drain begins when the close does (before in-flight requests finish) and is
  // awaited before the database closes.
  const drainMs = drainBudgetMs(config.shutdownGraceMs);
  app.addHook('preClose', async () => {
    void dispatcher.stop(drainMs);
  });
  app.addHook('onClose', async () => {
    await dispatcher.stop(drainMs);
  });
  // Header values written in plain text before migration 0014 are sealed once, here.
  app.addHook('onReady', async () => {
    const sealed = await sealPlainHeaders(db, masterKey);
    if (sealed > 0) app.log.info({ sealed }, 'webhook header values stored in plain text were sealed');
  });
  return webhooks;
}

/** Routes of the webhooks module (operator delivery log and replay). */
export async function webhooksRoutes(app: FastifyInstance, { webhooks, idempotency }: { webhooks: Webhooks; idempotency: IdempotencyKeys }): Promise<void> {
  await webhooksOperatorRoutes(app, { service: webhooks.service });
  await merchantWebhookRoutes(app, { service: webhooks.service, idempotency });
}
