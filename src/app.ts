// buildApp(deps): the whole payd HTTP application. main.ts and the tests call it.
import { createHmac, hkdfSync, randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import formbody from '@fastify/formbody';
import type { Config } from './config.ts';
import type { Db } from './platform/db/index.ts';
import { createPgDb } from './platform/db/pg.ts';
import { primaryReads, type ReadRouter, replicaReads } from './platform/db/reads.ts';
import { KeyStore } from './platform/crypto/keystore.ts';
import { authPlugin } from './platform/http/auth.ts';
import { clientErrorHandler, errorHandlerPlugin, frameworkErrors } from './platform/http/error-handler.ts';
import { capConnectionsPerAddress } from './platform/http/connection-cap.ts';
import { registerRateLimits } from './platform/http/rate-limit.ts';
import { inputGuardPlugin } from './platform/http/input-guard.ts';
import { canonicaliseUuids } from './platform/http/ids.ts';
import { strictDateTimeFormat } from './platform/http/date-time.ts';
import { lazySchemaController } from './platform/http/lazy-compilers.ts';
import { openapiPlugin } from './openapi/openapi.ts';
import { ProblemSchema } from './platform/http/schemas.ts';
import { loggerOptions, requestChild, writeUnredacted } from './platform/observability/logger.ts';
import { createMetrics, metricsPlugin, poolGauges, readMetrics, replicaPoolGauges } from './platform/observability/metrics.ts';
import { CHALLENGE_AGES, challengeGauges, operationsBacklogGauges } from './payments/metrics.ts';
import { webhookBacklogGauges, webhookDispatcherGauge } from './webhooks/metrics.ts';
import { deliveriesRepo } from './webhooks/deliveries.repo.ts';
import type { Tracing } from './platform/observability/tracing.ts';
import { httpTracing } from './platform/observability/http-tracing.ts';
import { tracedDb } from './platform/db/traced.ts';
import { tracedPartners } from './partners/traced.ts';
import { registerRequestLog, RequestLog } from './platform/observability/request-log.ts';
import { Counter } from 'prom-client';
import { PartnerTelemetry } from './payments/partner-telemetry.ts';
import { paymentsRepo } from './payments/payments.repo.ts';
import { healthRoutes } from './platform/observability/health.ts';
import { EntitiesService } from './admin/entities.service.ts';
import { adminRoutes } from './admin/admin.routes.ts';
import { ApiKey, Entity } from './admin/entities.schemas.ts';
import { ACCESS_TOKEN_KEYS, AccessTokens, RevokedKeys } from './identity/oauth/access-tokens.ts';
import { tokenRoutes } from './identity/oauth/token.routes.ts';
import { identityCors } from './identity/oauth/cors.ts';
import { REDIRECTION_KEYS, RedirectionTokens } from './checkout/redirection-token.ts';
import { Jwk, signingJwksRoutes } from './checkout/signing-jwks.routes.ts';
import { problems } from './platform/http/problem.ts';
import { type Clock, systemClock } from './platform/clock.ts';
import type { PartnerRegistry } from './partners/port.ts';
import { configuredPartners } from './partners/registry.ts';
import { partnerWebhookRoutes } from './payments/partner-webhooks.routes.ts';
import { partnerPages } from './partners/pages.ts';
import { EligibilityEngine } from './eligibility/engine.ts';
import { EligibilityRulesService } from './eligibility/rules.service.ts';
import { eligibilityRoutes } from './eligibility/eligibility.routes.ts';
import { COMMON_SCHEMAS } from './payments/common.schemas.ts';
import { PAYMENT_SCHEMAS, PaymentEventData } from './payments/payments.schemas.ts';
import { ClientSession } from './payments/client-sessions.schemas.ts';
import type { PaymentsService } from './payments/payments.service.ts';
import { AfterAuthorization } from './payments/after-authorization.ts';
import { RecentPayments } from './payments/recent-payments.ts';
import type { OperationsService } from './payments/operations.service.ts';
import { ClientSessionsService, widgetKey } from './payments/client-sessions.service.ts';
import { paymentsRoutes } from './payments/payments.routes.ts';
import { clientSessionsRoutes } from './payments/client-sessions.routes.ts';
import { savedCardsRoutes } from './payments/saved-cards.routes.ts';
import { SavedCardsService } from './payments/saved-cards.service.ts';
import { Recovery } from './payments/recovery.ts';
import { drainBudgetMs } from './platform/lifecycle.ts';
import { fingerprintKey } from './payments/cards.ts';
import { bodySeen, IdempotencyKeys } from './platform/http/idempotency.ts';
import { ReturnLinks } from './payments/return-links.ts';
import { createIdentityProvider } from './identity/provider.ts';
import type { IdentityService } from './identity/idp/idp.service.ts';
import { dashboardRoutes } from './dashboard/dashboard.routes.ts';
import { webCookies } from './web/index.ts';
import { membersRoutes } from './dashboard/members.routes.ts';
import { PaymentLinksService } from './links/links.service.ts';
import { LINK_SCHEMAS } from './links/links.schemas.ts';
import { paymentLinksRoutes } from './links/links.routes.ts';
import { customerPageRoutes } from './links/customer-page.routes.ts';
import { CheckoutService } from './checkout/checkout.service.ts';
import { checkoutRoutes } from './checkout/checkout.routes.ts';
import { attachWebhooks, webhooksRoutes } from './webhooks/index.ts';
import { merchantEventsRoutes } from './webhooks/events.routes.ts';
import { listRoutes } from './payments/lists.routes.ts';
import { linkListRoutes } from './links/links-list.routes.ts';
import { EventSchema } from './webhooks/webhooks.schemas.ts';
import { sealHeaders } from './webhooks/header-seal.ts';

export const VERSION = '0.1.0';

export interface AppDeps {
  config: Config;
  db: Db;
  masterKey: Buffer;
  /** false to silence logs (tests); default: pino at config.logLevel. */
  logger?: boolean;
  /** Where the log lines go (tests read them); default stdout. */
  logStream?: { write(line: string): void };
  /** Client-session expiry and the simulators' delayed outcomes (platform/clock.ts); default the system clock. */
  clock?: Clock;
  /** The payments this process wrote last (payments/recent-payments.ts); default one of config.recentPayments. Tests look into it. */
  recent?: RecentPayments;
  /**
   * Tracing on (main.ts builds it from PAYD_OTEL_EXPORTER; tests from an in-memory
   * exporter): requests, database transactions and statements, partner calls and webhook
   * attempts are spans (docs/operations.md, Tracing). Absent: no span anywhere.
   */
  tracing?: Tracing | undefined;
}

export interface Services {
  entities: EntitiesService;
  keys: KeyStore;
  accessTokens: AccessTokens;
  revokedKeys: RevokedKeys;
  redirection: RedirectionTokens;
  partners: PartnerRegistry;
  eligibility: EligibilityEngine;
  payments: PaymentsService;
  operations: OperationsService;
  clientSessions: ClientSessionsService;
  recovery: Recovery;
  links: PaymentLinksService;
  checkout: CheckoutService;
  /** The identity provider's users and sessions (the dashboard and the console sign in through it). */
  identity: IdentityService;
}

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request's one log line (a canonical log line): written when the answer has gone,
 * with the request (method, URL without credentials, host, address), the status and the
 * time taken; Fastify's "incoming request" line is not written (docs/decisions.md, "One
 * log line per request"). A request that errored keeps Fastify's "request errored" line.
 */
class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) return super.requestCompleted(error, request, reply);
    // Its fields all come from the serializers: written without the redaction pass (logger.ts).
    writeUnredacted(request.log, { req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const tracer = deps.tracing?.tracer;
  // Tracing on: the database and the partners through their traced decorators (platform/db/traced.ts, partners/traced.ts).
  const db = tracer ? tracedDb(deps.db, tracer) : deps.db;
  let shuttingDown = false;

  const keys = new KeyStore(db, deps.masterKey);
  const purposes = [ACCESS_TOKEN_KEYS, REDIRECTION_KEYS];
  // Keys are made on first use (keystore.ts); the ones already stored must open now, so
  // that a process with another master key stops here rather than on every request.
  keys.register(...purposes);
  await keys.checkMasterKey();
  const entities = new EntitiesService(db);
  const revokedKeys = new RevokedKeys(entities, config.accessTokenTtlSeconds);
  await revokedKeys.start();
  await entities.startRevocationFeed((keyId) => revokedKeys.add(keyId));
  const accessTokens = new AccessTokens(keys, config.baseUrl, config.accessTokenTtlSeconds, revokedKeys);
  const redirection = new RedirectionTokens(keys, config.baseUrl);
  const clock = deps.clock ?? systemClock;
  // The simulators sign their notifications with a key derived from the master key.
  const notificationSecret = createHmac('sha256', deps.masterKey).update('payd simulator notifications').digest('base64url');
  const configured = configuredPartners(db, { baseUrl: config.baseUrl, latencyMs: config.simLatencyMs, inline: config.simInline, notificationSecret, clock }, config.partners);
  const partners = tracer ? tracedPartners(configured, tracer) : configured;
  const eligibilityRules = new EligibilityRulesService(db, partners);
  await eligibilityRules.startFeed();
  const eligibility = new EligibilityEngine(partners, eligibilityRules);
  const metrics = createMetrics();
  // The pool is read first: a scrape runs the collectors in this order, and the backlog
  // gauges' queries would otherwise wait in the pool (a tick) when it is read.
  if (db.poolStats) poolGauges(metrics.registry, db.poolStats);
  webhookBacklogGauges(metrics.registry, () => deliveriesRepo.backlog(db));
  operationsBacklogGauges(metrics.registry, () => paymentsRepo.pendingOperations(db));
  challengeGauges(metrics.registry, () => paymentsRepo.challengeAges(db, new Date(clock()), CHALLENGE_AGES.map((a) => a.from)));
  const telemetry = new PartnerTelemetry(metrics.registry);
  const returnLinks = new ReturnLinks(deps.masterKey, config.baseUrl);
  const paymentsConfig = {
    telemetry,
    baseUrl: config.baseUrl,
    returnLinks,
    eligibility,
    fingerprintKey: fingerprintKey(deps.masterKey),
    partnerTimeoutMs: config.partnerTimeoutMs,
    maxOperationsPerPayment: config.maxOperationsPerPayment,
    sessionMaxAttempts: config.sessionMaxAttempts,
    holdAttempts: config.idempotencyHoldAttempts,
    holdIntervalMs: config.idempotencyHoldIntervalMs,
    clock,
    recent: deps.recent ?? new RecentPayments(config.recentPayments),
  };
  // Payments, operations and what follows an authorization (payments/after-authorization.ts).
  const afterAuthorization = new AfterAuthorization(db, partners, paymentsConfig);
  const { payments, operations } = afterAuthorization;
  const savedCards = new SavedCardsService(db, partners);
  const clientSessions = new ClientSessionsService(db, eligibility, { baseUrl: config.baseUrl, widgetKey: widgetKey(deps.masterKey), maxAttempts: config.sessionMaxAttempts, clock });
  const recovery = new Recovery(db, payments, config.recoveryGraceSeconds, { expirySeconds: config.challengeExpirySeconds, clock }, tracer);
  const links = new PaymentLinksService(db, clientSessions, { baseUrl: config.baseUrl, allowPrivateWebhookTargets: config.webhookAllowPrivateTargets,
    sealWebhookHeaders: (entityId, headers) => sealHeaders(deps.masterKey, entityId, headers),
    reverseDuplicatePayment: (entityId, paymentId) => afterAuthorization.reverseDuplicate(entityId, paymentId),
  });
  // Idempotency keys of every keyed creating request (platform/http/idempotency.ts).
  const idempotency = new IdempotencyKeys(db, {
    key: Buffer.from(hkdfSync('sha256', deps.masterKey, Buffer.alloc(0), 'payd idempotency fingerprint v1', 32)),
    holdAttempts: config.idempotencyHoldAttempts,
    holdIntervalMs: config.idempotencyHoldIntervalMs,
    // A request that created nothing in this time has died: the longest it can take is
    // bounded by its statements and its partner calls.
    staleClaimMs: 2 * Math.max(config.dbTimeouts.statementTimeoutMs, config.partnerTimeoutMs, config.requestTimeoutMs),
  });
  const checkout = new CheckoutService(db, clientSessions, payments, links, redirection, partners, { baseUrl: config.baseUrl, returnLinks, clock });
  const identity = await createIdentityProvider({ config, db, keys, masterKey: deps.masterKey, clock });
  const services: Services = {
    entities, keys, accessTokens, revokedKeys, redirection, partners, eligibility, payments, operations, clientSessions, recovery, links, checkout,
    identity: identity.service,
  };

  // Reads that allow staleness go to the replica when one is set and fresh enough (platform/db/reads.ts).
  const replicaDb = config.databaseReadUrl && db.kind === 'pg' ? createPgDb(config.databaseReadUrl, config.dbPoolSize, config.dbTimeouts) : undefined;
  const replica = replicaDb && tracer ? tracedDb(replicaDb, tracer) : replicaDb;
  if (replica?.poolStats) replicaPoolGauges(metrics.registry, replica.poolStats);
  const reads: ReadRouter = replica
    ? replicaReads(db, replica, {
      defaultMaxLagMs: config.readMaxLagMs, log: { warn: (obj, msg) => app.log.warn(obj, msg) },
      counter: readMetrics(metrics.registry, () => reads.lagMs()),
    })
    : primaryReads(db);

  const logging = !(deps.logger === false || config.logLevel === 'silent');
  const httpTrace = tracer ? httpTracing(tracer) : undefined;
  const app = Fastify({
    // LOG_LEVEL=silent: no logger at all, so that no request builds a child logger (its
    // bindings, redacted) whose every line would be dropped.
    logger: logging ? { ...loggerOptions(config.logLevel), ...(httpTrace ? { mixin: httpTrace.mixin } : {}), ...(deps.logStream ? { stream: deps.logStream } : {}) } : false,
    // Tracing on: each request's logger binds its span's trace_id and span_id (http-tracing.ts).
    // (Without tracing, Fastify's own factory but for the redaction pass over the request id: logger.ts, requestChild.)
    ...(logging ? { childLoggerFactory: httpTrace ? httpTrace.childLoggerFactory : requestChild } : {}),
    bodyLimit: config.bodyLimitBytes,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Timestamps are checked as JavaScript and PostgreSQL will read them (date-time.ts).
    ajv: { customOptions: { allErrors: true, removeAdditional: false, coerceTypes: false, useDefaults: true }, onCreate: strictDateTimeFormat as never },
    // Each schema compiles on its first use, not at start-up (lazy-compilers.ts).
    schemaController: lazySchemaController() as never,
    // Requests arriving during shutdown get payd's own 503 problem (onRequest below), not
    // Fastify's non-problem body.
    return503OnClosing: false,
    // One line per request, at its end, not Fastify's two (OneLinePerRequest).
    logController: new OneLinePerRequest(),
    // Slow or idle clients do not hold connections (docs/operations.md, Timeouts): the whole
    // request (headers and body) must arrive within requestTimeout, its headers within
    // headersTimeout (a connection that sends nothing is closed then too), an idle
    // keep-alive connection is closed after keepAliveTimeout, and connections above
    // maxConnections are refused. Node checks the first two every connectionsCheckingInterval.
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, Math.max(25, Math.floor(config.headersTimeoutMs / 4))),
    },
    frameworkErrors,
    clientErrorHandler,
  });
  app.server.maxConnections = config.maxConnections;
  // One address holds at most its share of those (connection-cap.ts).
  capConnectionsPerAddress(app.server, config.maxConnectionsPerAddress);
  telemetry.log = app.log;
  // Tracing on: each request's span, active for all it does (before every other hook).
  httpTrace?.register(app);
  app.decorate('services', services);
  const webhooks = attachWebhooks(app, { db, masterKey: deps.masterKey, config, tracer });
  webhookDispatcherGauge(metrics.registry, () => webhooks.dispatcher.claiming);

  // During shutdown every response closes its connection, including the responses of
  // requests that were in flight when SIGTERM came, so that the server can finish closing.
  // (Hooks that do not wait for anything take Fastify's callback form: an async function
  // costs a promise and a turn of the microtask queue on every request.)
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (shuttingDown) reply.header('connection', 'close');
    done(null, payload);
  });
  // HSTS when payd is served over https (RFC 6797): a year, on every answer, without
  // includeSubDomains (payd does not speak for the other hosts of its domain) or preload.
  const hsts = config.baseUrl.startsWith('https://');
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    if (hsts) reply.header('strict-transport-security', 'max-age=31536000');
    // A request that arrives once the stop has begun (on a connection already open) is not
    // started: 503 with Retry-After, so the client retries, on another process if there is
    // one. Requests already in flight finish. The probes answer for themselves.
    if (shuttingDown && request.url !== '/healthz' && request.url !== '/readyz' && request.url !== '/metrics') {
      throw problems.unavailable('payd is shutting down. Retry, with the same idempotency key.', 1);
    }
    done();
  });
  const drainMs = drainBudgetMs(config.shutdownGraceMs);
  // Ids typed in upper case (or as urn:uuid:) reach the services in their canonical form.
  app.addHook('preValidation', canonicaliseUuids);
  app.addHook('preClose', async () => {
    shuttingDown = true;
    void recovery.stop(drainMs); // no new pass from now on; the one under way is awaited below
  });
  app.addHook('onClose', async () => {
    revokedKeys.stop();
    await entities.stopRevocationFeed();
    await eligibilityRules.stopFeed();
    await recovery.stop(drainMs);
    await identity.stop();
    await reads.close();
  });

  await app.register(errorHandlerPlugin);
  await app.register(inputGuardPlugin); // before authentication reads a header
  // JSON bodies: an empty body with a JSON content type counts as no body (operations
  // whose body is optional); anything else goes through Fastify's safe parser.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('text/plain'); // no route takes text: 415 instead of a confusing 400
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    bodySeen(request, body as string); // its HMAC, on idempotent routes with a key
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined);
    return parseJson(request, body as string, done);
  });
  await app.register(formbody, { bodyLimit: config.bodyLimitBytes });
  // The one cookie implementation of the pages (src/web): signed with a key of its own.
  await app.register(webCookies, { secret: Buffer.from(hkdfSync('sha256', deps.masterKey, Buffer.alloc(0), 'payd web cookies v1', 32)) });
  await app.register(metricsPlugin, { metrics });
  for (const schema of [ProblemSchema, Entity, ApiKey, Jwk, ...COMMON_SCHEMAS, ...PAYMENT_SCHEMAS, PaymentEventData, ClientSession, ...LINK_SCHEMAS, EventSchema]) app.addSchema(schema);
  await app.register(openapiPlugin, { baseUrl: config.baseUrl, version: VERSION });
  await app.register(authPlugin, {
    authenticators: {
      adminToken: config.adminToken,
      bearer: (token) => accessTokens.verify(token),
      apiKey: async (key) => {
        const found = await entities.resolveApiKey(key);
        if (!found) throw problems.unauthorized('The API key is unknown or revoked.', 'ApiKey realm="payd", header="x-api-key"');
        return { entityId: found.entity_id, scopes: ['payment-api'], via: 'apiKey', apiKeyId: found.id };
      },
    },
  });

  // Rate limits: after authentication (the payment API's are per credential), before the routes (rate-limit.ts).
  await registerRateLimits(app, db, {
    windowSeconds: config.rateLimitWindowSeconds, tokenPerKey: config.rateLimitTokenPerKey,
    tokenPerAddress: config.rateLimitTokenPerAddress, apiPerKey: config.rateLimitApiPerKey,
  }, (err) => app.log.warn({ err }, 'rate-limit counters not synced'));
  // The dashboard's request log: calls buffered per entity, inserted about once a second (request-log.ts).
  const droppedCalls = new Counter({ name: 'payd_request_log_dropped_total', help: 'Payment API calls not kept in the request log (over PAYD_REQUEST_LOG_PER_SECOND for an entity in a second)', registers: [metrics.registry] });
  registerRequestLog(app, new RequestLog(db, {
    perSecond: config.role === 'worker' ? 0 : config.requestLogPerSecond,
    onError: (err) => app.log.warn({ err }, 'request log not written: its calls are dropped until the database answers (logged again once it does)'),
    onRecovered: (failed) => app.log.info({ failed }, 'request log written again'),
    onDropped: () => droppedCalls.inc(),
  }));
  await app.register(healthRoutes, { db, isShuttingDown: () => shuttingDown });
  if (config.role !== 'worker') {
    await app.register(identityCors, { db });
    await app.register(tokenRoutes, { apiKeys: entities, tokens: accessTokens, grants: identity.grants });
  }
  if (config.role === 'all' || config.role === 'identity') {
    await app.register(identity.routes);
  }
  if (config.role === 'all' || config.role === 'api') {
    await app.register(adminRoutes, { entities, keys, purposes, onApiKeyRevoked: (id) => revokedKeys.add(id) });
    await app.register(signingJwksRoutes, { redirection });
    await app.register(clientSessionsRoutes, { sessions: clientSessions, idempotency });
    await app.register(eligibilityRoutes, { engine: eligibility, rules: eligibilityRules });
    await app.register(paymentsRoutes, { payments, operations, reads, idempotency });
    await app.register(savedCardsRoutes, { savedCards, idempotency });
    await app.register(paymentLinksRoutes, { links, idempotency });
    await app.register(customerPageRoutes, { links, sessions: clientSessions, merchantName: (id) => checkout.merchantName(id) });
    await app.register(checkoutRoutes, { checkout });
    for (const connector of partners.all()) {
      const pages = partnerPages(connector);
      if (pages) await app.register(async (scope) => pages.registerRoutes(scope));
    }
    await app.register(partnerWebhookRoutes, { partners, payments });
    await app.register(webhooksRoutes, { webhooks, idempotency });
    await app.register(merchantEventsRoutes, { reads });
    await app.register(listRoutes, { reads, payments, sessions: clientSessions });
    await app.register(linkListRoutes, { reads, links });
    await app.register(membersRoutes, { db, entities, identity: identity.service, mailer: identity.mailer, baseUrl: config.baseUrl });
    await app.register(async (scope) => dashboardRoutes(scope, {
      db, reads, identity: identity.service, payments, operations, origin: new URL(config.baseUrl).origin, idpOrigin: config.consoleOrigin,
      links, entities, onApiKeyRevoked: (id) => revokedKeys.add(id), webhooks: webhooks.service,
      mailer: identity.mailer, baseUrl: config.baseUrl, eligibilityRules, requestLogPerSecond: config.requestLogPerSecond,
      key: Buffer.from(hkdfSync('sha256', deps.masterKey, Buffer.alloc(0), 'payd dashboard session v1', 32)),
    }));
  }
  return app;
}
