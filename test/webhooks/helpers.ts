// Shared pieces of the webhook tests: a real HTTP receiver on loopback, fast dispatcher
// settings, and shortcuts for the operator API and the outbox.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import type { Config } from '../../src/config.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { enqueueEvent, type NewEvent } from '../../src/webhooks/index.ts';
import { createTestApp, MASTER_KEY, type TestApp } from '../helpers/app.ts';
import { waitFor as waitForState } from '../helpers/wait.ts';

/** Dispatcher settings that make retries take milliseconds instead of minutes. */
export const FAST: Partial<Config> = {
  webhookBackoffBaseMs: 100,
  webhookBackoffMaxMs: 2000,
  webhookMaxAgeMs: 60_000,
  webhookPollMs: 20,
  // Generous: on PGlite the database runs on the test's own event loop, which also
  // serves the receiver, so a loaded machine can slow answers down.
  webhookTimeoutMs: 5000,
  webhookLeaseMs: 10_000,
  webhookAllowPrivateTargets: true,
};

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** Header lines as sent: name, value, name, value, ... (repeated names stay apart). */
  rawHeaders: string[];
  body: string;
  at: number;
}

export interface Reply {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Wait this long before answering (to play a slow receiver). */
  delayMs?: number;
  /** Answer only once this settles (after delayMs): the test decides when the answer comes. */
  hold?: Promise<unknown>;
}

export interface Receiver {
  url: string;
  requests: Received[];
  /** How the next requests are answered (n = 0 for the first request); default 200. */
  respond: (req: Received, n: number) => Reply;
  close(): Promise<void>;
}

export async function startReceiver(respond: Receiver['respond'] = () => ({ status: 200, body: 'ok' })): Promise<Receiver> {
  const requests: Received[] = [];
  const sockets = new Set<Socket>();
  const receiver: Receiver = { url: '', requests, respond, close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const got: Received = { path: req.url ?? '/', headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      const n = requests.push(got) - 1;
      const r = receiver.respond(got, n);
      // The receiver's own delay (delayMs: playing a slow receiver), not a wait of the test.
      setTimeout(() => {
        void Promise.resolve(r.hold).finally(() => {
          if (res.destroyed) return;
          res.writeHead(r.status, { 'content-type': 'text/plain', ...r.headers });
          res.end(r.body ?? '');
        });
      }, r.delayMs ?? 0);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return receiver;
}

/**
 * A dispatcher's polls, counted: pass `polled` as the onSuccess of its start() (called
 * after each claim the database answered). The positive signal a test waits for before
 * asserting that something was NOT sent: the dispatcher did look.
 */
export class Polls {
  count = 0;
  readonly polled = (): void => { this.count++; };

  /**
   * Resolves once the dispatcher has polled `n` more times. The first of them may have
   * begun before this call; the next ones began after it (so they saw every delivery due
   * by then), and each later one gives what the one before claimed a poll period to reach
   * the receiver.
   */
  async more(n = 3, timeoutMs = 10_000): Promise<void> {
    const target = this.count + n;
    await waitFor(() => this.count >= target, timeoutMs, `${n} more dispatcher polls`);
  }
}

/** A test app with fast dispatcher settings, its dispatcher running (its polls counted), and a receiver. */
export async function startWebhookApp(): Promise<{ t: TestApp; rx: Receiver; polls: Polls }> {
  const t = await createTestApp(FAST);
  const rx = await startReceiver();
  const polls = new Polls();
  t.app.webhooks.dispatcher.start((err) => console.error(err), polls.polled);
  return { t, rx, polls };
}

export async function stopWebhookApp(w: { t: TestApp; rx: Receiver }): Promise<void> {
  await w.t.close();
  await w.rx.close();
}

/** Checks every 20 ms until `check` returns a truthy value, and returns it (fails after timeoutMs): test/helpers/wait.ts. */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  return waitForState(async () => (await check()) || undefined, { timeout: timeoutMs, every: 20, what }) as Promise<T>;
}

export async function setEndpoint(t: TestApp, entityId: string, url: string, headers?: Array<{ name: string; values: string[] }>) {
  const res = await t.app.inject({
    method: 'PUT', url: `/admin/v1/entities/${entityId}/webhook-endpoint`, headers: t.adminHeaders,
    payload: { url, ...(headers ? { headers } : {}) },
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

export async function secretOf(app: FastifyInstance, headers: Record<string, string>, entityId: string): Promise<string> {
  const res = await app.inject({ url: `/admin/v1/entities/${entityId}/webhook-secret`, headers });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().secret as string;
}

/** Enqueues one event in its own committed transaction (as a module would, with its change). */
export async function enqueue(db: Db, event: NewEvent) {
  return db.transaction((tx) => enqueueEvent(tx, event));
}

export async function getEvent(t: { app: FastifyInstance; adminHeaders: Record<string, string> }, entityId: string, eventId: string) {
  const res = await t.app.inject({ url: `/admin/v1/entities/${entityId}/webhook-events/${eventId}`, headers: t.adminHeaders });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Waits until the event's newest delivery has left PENDING; returns the event view. */
export async function settled(t: { app: FastifyInstance; adminHeaders: Record<string, string> }, entityId: string, eventId: string, timeoutMs = 15_000) {
  return waitFor(async () => {
    const e = await getEvent(t, entityId, eventId);
    return e.status !== 'PENDING' ? e : undefined;
  }, timeoutMs, `event ${eventId} to settle`);
}

/** A second payd app on an existing database (a restarted worker). */
export async function buildAppOn(db: Db, config: Config): Promise<FastifyInstance> {
  const app = await buildApp({ config, db, masterKey: MASTER_KEY, logger: false });
  await app.ready();
  return app;
}

export async function tableCounts(db: Db) {
  const { rows } = await db.query<Record<string, number>>(
    `SELECT (SELECT count(*)::int FROM webhook_endpoints) AS endpoints, (SELECT count(*)::int FROM webhook_secrets) AS secrets,
            (SELECT count(*)::int FROM webhook_events) AS events, (SELECT count(*)::int FROM webhook_deliveries) AS deliveries,
            (SELECT count(*)::int FROM webhook_attempts) AS attempts,
            (SELECT coalesce(max(updated_at)::text, '') FROM webhook_endpoints) AS endpoint_updated,
            (SELECT coalesce(max(version), 0) FROM webhook_secrets) AS secret_version`,
  );
  return rows[0];
}
