// At-least-once delivery across restarts, lease expiry after a worker died, and no
// double delivery with two dispatchers on one database (FOR UPDATE SKIP LOCKED).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestApp } from '../helpers/app.ts';
import { createPgDb } from '../../src/platform/db/pg.ts';
import type { Db, Queryable } from '../../src/platform/db/index.ts';
import { deliveriesRepo } from '../../src/webhooks/deliveries.repo.ts';
import { enqueueEvent, WebhookDispatcher } from '../../src/webhooks/index.ts';
import { buildAppOn, enqueue, FAST, getEvent, Polls, setEndpoint, settled, startReceiver, waitFor } from './helpers.ts';

describe('webhook durability', () => {
  it('completes a delivery after the worker restarts mid-backoff, with the same event id', async () => {
    const t = await createTestApp({ ...FAST, webhookBackoffBaseMs: 3000 });
    const rx = await startReceiver((req, n) => (n === 0 ? { status: 500 } : { status: 200 }));
    let second: Awaited<ReturnType<typeof buildAppOn>> | undefined;
    try {
      const m = await t.createMerchant();
      await setEndpoint(t, m.entityId, rx.url);
      t.app.webhooks.dispatcher.start();
      const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: { k: 1 } });
      await waitFor(() => rx.requests.length === 1, 5000, 'the first attempt');
      await waitFor(async () => (await getEvent(t, m.entityId, id)).deliveries[0].attempts.length === 1);
      // The worker stops while the delivery waits for its retry (about 3 s).
      await t.app.close();
      assert.equal(rx.requests.length, 1);
      second = await buildAppOn(t.testDb.db, t.config);
      second.webhooks.dispatcher.start();
      const s = { app: second, adminHeaders: t.adminHeaders };
      const event = await settled(s, m.entityId, id);
      assert.equal(event.status, 'DELIVERED');
      assert.equal(rx.requests.length, 2);
      assert.deepEqual(rx.requests.map((r) => r.headers['payd-event-id']), [id, id]);
      assert.equal(rx.requests[0]!.body, rx.requests[1]!.body);
      assert.deepEqual(event.deliveries[0].attempts.map((a: any) => a.status_code), [500, 200]);
    } finally {
      await second?.close();
      await t.testDb.close();
      await rx.close();
    }
  });

  it('retries a delivery claimed by a worker that died, once its lease ends', async () => {
    const t = await createTestApp({ ...FAST, webhookTimeoutMs: 2500, webhookLeaseMs: 3000 });
    const rx = await startReceiver();
    try {
      const m = await t.createMerchant();
      await setEndpoint(t, m.entityId, rx.url);
      const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
      // A worker claims it and dies before calling (nothing is recorded).
      const claimed = await deliveriesRepo.claimDue(t.testDb.db, 10, 3000, randomUUID());
      assert.equal(claimed.length, 1);
      const claimedAt = Date.now();
      const polls = new Polls();
      t.app.webhooks.dispatcher.start(undefined, polls.polled);
      await polls.more(); // the dispatcher polled (well within the 3 s lease) and claimed nothing
      assert.equal(rx.requests.length, 0, 'not retried while the lease runs');
      const event = await settled(t, m.entityId, id);
      assert.ok(rx.requests[0]!.at - claimedAt >= 2900, 'retried after the lease');
      assert.equal(rx.requests.length, 1);
      // The dead worker's attempt number is used up; the log shows the attempt that happened.
      assert.equal(event.deliveries[0].attempt_count, 2);
      assert.deepEqual(event.deliveries[0].attempts.map((a: any) => a.number), [2]);
      // The dead worker cannot record an outcome any more: its claim is gone.
      const late = await t.testDb.db.transaction((tx) => deliveriesRepo.recordAttempt(tx, {
        id: randomUUID(), deliveryId: claimed[0]!.id, claimToken: claimed[0]!.claim_token, attemptNumber: 1, url: rx.url,
        startedAt: new Date(), durationMs: 1, statusCode: 500, error: 'HTTP 500', responseBody: null, delivered: false, retryInMs: 0, maxAgeMs: 1000,
      }));
      assert.equal(late, undefined);
      assert.equal((await getEvent(t, m.entityId, id)).status, 'DELIVERED');
    } finally {
      await t.close();
      await rx.close();
    }
  });

  it('records a call that outlasts the shutdown drain as interrupted; the next worker delivers at once', async () => {
    // The drain budget is most of a 1 s grace; the first answer is held until the test ends.
    const t = await createTestApp({ ...FAST, shutdownGraceMs: 1000, webhookTimeoutMs: 20_000, webhookLeaseMs: 30_000, webhookBackoffBaseMs: 60_000 });
    let release: () => void = () => {};
    const held = new Promise<void>((r) => { release = r; });
    const rx = await startReceiver((_req, n) => (n === 0 ? { status: 200, hold: held } : { status: 200 }));
    let second: Awaited<ReturnType<typeof buildAppOn>> | undefined;
    try {
      const m = await t.createMerchant();
      await setEndpoint(t, m.entityId, rx.url);
      t.app.webhooks.dispatcher.start();
      const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
      await waitFor(() => rx.requests.length === 1);
      await t.app.close(); // returns although the receiver never answered
      second = await buildAppOn(t.testDb.db, t.config);
      second.webhooks.dispatcher.start();
      const event = await settled({ app: second, adminHeaders: t.adminHeaders }, m.entityId, id);
      assert.equal(event.status, 'DELIVERED');
      const attempts = event.deliveries[0].attempts;
      assert.equal(attempts[0].error, 'interrupted: the worker stopped during the call');
      assert.equal(attempts[1].status_code, 200);
      // A backoff would wait at least 45 s (base 60 s - 25 %); the lease 30 s.
      assert.ok(rx.requests[1]!.at - rx.requests[0]!.at < 25_000, 'no backoff, no lease wait after an interruption');
    } finally {
      release();
      await second?.close();
      await t.testDb.close();
      await rx.close();
    }
  });

  it('two dispatchers on one database deliver each event exactly once (SKIP LOCKED)', async () => {
    const t = await createTestApp(FAST);
    const rx = await startReceiver(() => ({ status: 200, delayMs: 5 }));
    // On PostgreSQL the second dispatcher has its own connection pool, like another process.
    const otherDb: Db = t.testDb.url ? createPgDb(t.testDb.url, 5) : t.testDb.db;
    // Counts what the second dispatcher claims, to show that both took part.
    let otherClaimed = 0;
    const counting: Db = Object.assign(Object.create(otherDb) as Db, {
      transaction: <T>(fn: (tx: Queryable) => Promise<T>) => otherDb.transaction((tx) => fn({
        exec: (sql: string) => tx.exec(sql),
        query: async (sql: string, params?: readonly unknown[]) => {
          const res = await tx.query(sql, params);
          if (sql.includes("SKIP LOCKED")) otherClaimed += res.rows.length;
          return res;
        },
      } as Queryable)),
    });
    const other = new WebhookDispatcher(counting, t.app.webhooks.secrets, {
      backoffBaseMs: 100, backoffMaxMs: 1000, maxAgeMs: 60_000, pollMs: 5, timeoutMs: 10_000, leaseMs: 20_000, allowPrivateTargets: true, concurrency: 4,
    });
    try {
      const m = await t.createMerchant();
      await setEndpoint(t, m.entityId, rx.url);
      const ids = new Set<string>();
      await t.testDb.db.transaction(async (tx) => {
        for (let i = 0; i < 60; i++) ids.add((await enqueueEvent(tx, { entityId: m.entityId, type: 'payment.captured', data: { i } })).id);
      });
      t.app.webhooks.dispatcher.start();
      other.start();
      await waitFor(async () => {
        const { rows } = await t.testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'DELIVERED'");
        return rows[0]!.n === 60;
      }, 20_000, 'all deliveries');
      // Both dispatchers stopped, their calls in flight (a second call of an event, if any) finished and recorded.
      await Promise.all([t.app.webhooks.dispatcher.stop(10_000), other.stop(10_000)]);
      const received = rx.requests.map((r) => String(r.headers['payd-event-id']));
      assert.equal(received.length, 60, 'one call per event');
      assert.deepEqual(new Set(received), ids);
      const { rows } = await t.testDb.db.query<{ n: number; max: number }>('SELECT count(*)::int AS n, max(attempt_number) AS max FROM webhook_attempts');
      assert.deepEqual(rows[0], { n: 60, max: 1 });
      assert.ok(otherClaimed > 0 && otherClaimed < 60, `the second dispatcher claimed ${otherClaimed} of 60`);

      if (t.testDb.url) {
        // A row another transaction holds is skipped, not waited for.
        await t.app.webhooks.dispatcher.stop();
        await other.stop();
        const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.voided', data: {} });
        const { id: free } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.voided', data: {} });
        await t.testDb.db.transaction(async (tx) => {
          await tx.query('SELECT id FROM webhook_deliveries WHERE event_id = $1 FOR UPDATE', [id]);
          const claimed = await deliveriesRepo.claimDue(otherDb, 10, 3000, randomUUID());
          assert.deepEqual(claimed.map((c) => c.event_id), [free]);
        });
      }
    } finally {
      await other.stop();
      if (otherDb !== t.testDb.db) await otherDb.close();
      await t.close();
      await rx.close();
    }
  });
});
