// A real payd app on a fresh test database, plus shortcuts tests share: onboarding a
// merchant, getting a token, reading problem bodies.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import assert from 'node:assert/strict';
import { buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import { createTestDb, type TestDb } from './db.ts';
import type { Clock } from '../../src/platform/clock.ts';
import { ReturnLinks } from '../../src/payments/return-links.ts';
import type { Tracing } from '../../src/platform/observability/tracing.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const MASTER_KEY = randomBytes(32);

export interface Merchant {
  entityId: string;
  apiKey: string;
  apiKeyId: string;
  token: string;
  /** Authorization header with the merchant's bearer token. */
  auth: { authorization: string };
}

export interface TestApp {
  app: FastifyInstance;
  testDb: TestDb;
  config: Config;
  /** Stops the app and starts a new one on the same database with these overrides (app and config change). */
  restart(overrides: Partial<Config>): Promise<void>;
  adminHeaders: { authorization: string };
  createMerchant(name?: string): Promise<Merchant>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Register extra (test-only) routes or hooks before the app is ready. */
  beforeReady?: (app: FastifyInstance) => void | Promise<void>;
  /** The app's clock (client-session expiry, simulated timeouts): a TestClock to move time without sleeping. */
  clock?: Clock;
  /** Tracing on (an in-memory exporter's: otel-sdk.ts createTracing). */
  tracing?: Tracing;
  /** The app logs (at config.logLevel: override logLevel too) to this instead of being silent. */
  logStream?: { write(line: string): void };
}

function appOptions(options: TestAppOptions) {
  return {
    ...(options.logStream ? { logStream: options.logStream } : { logger: false }),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.tracing ? { tracing: options.tracing } : {}),
  };
}

export async function createTestApp(overrides: Partial<Config> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const testDb = await createTestDb();
  const config = loadConfig(
    { PAYD_ADMIN_TOKEN: ADMIN_TOKEN, PAYD_BASE_URL: 'http://payd.test', LOG_LEVEL: 'silent' },
    overrides,
  );
  const app = await buildApp({ config, db: testDb.db, masterKey: MASTER_KEY, ...appOptions(options) });
  if (options.beforeReady) await options.beforeReady(app);
  await app.ready();
  const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };

  const t: TestApp = {
    app,
    testDb,
    config,
    adminHeaders,
    async restart(more) {
      await t.app.close();
      t.config = loadConfig({ PAYD_ADMIN_TOKEN: ADMIN_TOKEN, PAYD_BASE_URL: 'http://payd.test', LOG_LEVEL: 'silent' }, { ...overrides, ...more });
      t.app = await buildApp({ config: t.config, db: testDb.db, masterKey: MASTER_KEY, ...appOptions(options) });
      if (options.beforeReady) await options.beforeReady(t.app);
      await t.app.ready();
    },
    async createMerchant(name = 'Test merchant') {
      const app = t.app;
      const entity = await app.inject({ method: 'POST', url: '/admin/v1/entities', headers: adminHeaders, payload: { name } });
      assert.equal(entity.statusCode, 201, entity.body);
      const entityId = entity.json().id as string;
      const key = await app.inject({ method: 'POST', url: `/admin/v1/entities/${entityId}/api-keys`, headers: adminHeaders });
      assert.equal(key.statusCode, 201, key.body);
      const apiKey = key.json().api_key as string;
      const token = await getToken(app, apiKey);
      return { entityId, apiKey, apiKeyId: key.json().id, token, auth: { authorization: `Bearer ${token}` } };
    },
    async close() {
      await t.app.close();
      await testDb.close();
    },
  };
  return t;
}

export async function getToken(app: FastifyInstance, apiKey: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().access_token as string;
}

/** Asserts an OAuth error (RFC 6749 5.2 / RFC 6750 3): application/json with error and error_description. */
export function expectOAuthError(res: LightMyRequestResponse, status: number, error?: string): Record<string, unknown> & { error: string; invalid_params?: Array<{ name: string; in: string; reason: string }> } {
  assert.equal(res.statusCode, status, `expected ${status}, got ${res.statusCode}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.json();
  assert.equal(typeof body.error, 'string');
  assert.equal(typeof body.error_description, 'string');
  if (error) assert.equal(body.error, error);
  if (status === 401) assert.ok(res.headers['www-authenticate'], 'a 401 carries WWW-Authenticate');
  assert.doesNotMatch(res.body, /\bat .+\.(ts|js):\d+|SELECT |INSERT |node_modules/);
  return body;
}

/** Asserts a problem+json response with the given status and returns its body. */
export function expectProblem(res: LightMyRequestResponse, status: number): Record<string, unknown> & { invalid_params?: Array<{ name: string; in: string; reason: string }> } {
  assert.equal(res.statusCode, status, `expected ${status}, got ${res.statusCode}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = res.json();
  assert.equal(body.status, status);
  assert.equal(typeof body.type, 'string');
  assert.equal(typeof body.title, 'string');
  assert.equal(typeof body.instance, 'string');
  assert.doesNotMatch(res.body, /\bat .+\.(ts|js):\d+|SELECT |INSERT |node_modules/);
  return body;
}

/** The path and query of a client session's outcome page, as payd hands it out (its MAC included: src/payments/return-links.ts). */
export function returnPath(sessionId: string): string {
  const u = new URL(new ReturnLinks(MASTER_KEY, 'http://payd.invalid').returnUrl(sessionId));
  return `${u.pathname}${u.search}`;
}
