// Real payd processes (node bin/payd.js): the api role does not dispatch, the worker role
// does, from the same database, and stops cleanly on SIGTERM.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDb, type TestDb } from '../helpers/db.ts';
import { ADMIN_TOKEN } from '../helpers/app.ts';
import { call, onboard, startPayd } from '../helpers/processes.ts';
import { createPgliteDb } from '../../src/platform/db/pglite.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { enqueueEvent, verifyWebhookSignature } from '../../src/webhooks/index.ts';
import { startReceiver, waitFor } from './helpers.ts';

describe('webhooks in payd processes', () => {
  let testDb: TestDb | undefined;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'payd-wh-proc-'));
    if (process.env.DATABASE_URL) testDb = await createTestDb();
  });
  after(async () => {
    await testDb?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The test's PostgreSQL database, or the PGlite data dir of the servers (while none runs). */
  async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    if (testDb) return fn(testDb.db);
    const db = await createPgliteDb({ dataDir: path.join(dir, 'pgdata') });
    try {
      return await fn(db);
    } finally {
      await db.close();
    }
  }

  it('the worker role delivers what the api role left in the outbox, and records it when stopped mid-call', async () => {
    // The receiver answers only once the worker was told to stop: the worker must wait for
    // the answer and record the delivery before it exits.
    let release: () => void = () => {};
    const held = new Promise<void>((r) => { release = r; });
    const rx = await startReceiver(() => ({ status: 200, body: 'ok', hold: held }));
    const env = {
      ...(testDb?.url ? { DATABASE_URL: testDb.url } : { PAYD_DATA_DIR: dir }),
      PAYD_WEBHOOK_POLL_MS: '50', PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    };
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    try {
      const api = await startPayd({ ...env, PAYD_ROLE: 'api' });
      const m = await onboard(api.base);
      const put = await call(api.base, 'PUT', `/admin/v1/entities/${m.entityId}/webhook-endpoint`, admin, { url: `${rx.url}/proc` });
      assert.equal(put.status, 200);
      const secret = put.body!.secret as string;
      assert.ok(secret);
      await api.stop();

      const { id } = await withDb((db) => db.transaction((tx) => enqueueEvent(tx, { entityId: m.entityId, type: 'payment.captured', data: { via: 'process' } })));

      const apiAgain = await startPayd({ ...env, PAYD_ROLE: 'api' });
      // The start is over once payd prints where it listens (a worker's dispatcher is
      // started before that line); from then on /metrics says whether this process's
      // dispatcher claims anything: it does not, so nothing can be sent.
      await waitFor(() => apiAgain.output().includes('listening on'), 15_000, 'the api role to finish starting');
      const metrics = await (await fetch(`${apiAgain.base}/metrics`)).text();
      assert.match(metrics, /^payd_webhook_dispatcher_running 0$/m, 'the api role runs no dispatcher');
      assert.equal(rx.requests.length, 0, 'the api role does not dispatch');
      assert.equal(await apiAgain.stop(), 0);

      const worker = await startPayd({ ...env, PAYD_ROLE: 'worker' });
      await waitFor(() => rx.requests.length === 1, 15_000, 'the worker to send');
      assert.match(await (await fetch(`${worker.base}/metrics`)).text(), /^payd_webhook_dispatcher_running 1$/m, 'the gauge the api role was read by says 1 where a dispatcher runs');
      const exited = worker.stop();
      // SIGTERM arrived first (the worker's /readyz no longer answers 200; the outcome is the same if it had not).
      await waitFor(async () => (await fetch(`${worker.base}/readyz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status, () => 0)) !== 200,
        15_000, 'the worker to begin stopping');
      release();
      assert.equal(await exited, 0, 'the worker exits 0 on SIGTERM');
      const r = rx.requests[0]!;
      assert.equal(r.headers['payd-event-id'], id);
      assert.equal(r.path, '/proc');
      assert.equal(JSON.parse(r.body).data.via, 'process');
      assert.equal(verifyWebhookSignature(secret, String(r.headers['payd-signature']), r.body), true);
      const { rows } = await withDb((db) => db.query<{ status: string }>('SELECT status FROM webhook_deliveries WHERE event_id = $1', [id]));
      assert.deepEqual(rows, [{ status: 'DELIVERED' }]);
    } finally {
      release();
      await rx.close();
    }
  });
});
