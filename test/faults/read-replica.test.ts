// Reads from a streaming replica (issue 24): `payd start` with DATABASE_URL on a primary
// and DATABASE_READ_URL on its standby (pg-pair.ts). The standby's replay is paused to
// make it stale on purpose: reads that allow more staleness than it has are served from
// it (and show its older data, as allowed), reads that allow less go to the primary, a
// payment not yet on the replica is found on the primary rather than answered 404, money
// decisions never see the replica's view, and a replica that stops answering costs no
// request anything but its speed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { call, onboard, SERVER_MASTER_KEY, type PaydProcess, startPayd } from '../helpers/processes.ts';
import { ADMIN_TOKEN, type TestApp } from '../helpers/app.ts';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createPgDb } from '../../src/platform/db/pg.ts';
import { hiddenFields } from '../identity/idp-helpers.ts';
import { cookieValue, createMembers, dashboardClient } from '../helpers/dashboard.ts';
import { sleep } from './db-fixture.ts';
import { type PgPair, startPgPair } from './pg-pair.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' };

/** payd_db_reads_total by "source/reason". */
async function readCounts(base: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^payd_db_reads_total\{source="(\w+)",reason="(\w+)"\} (\d+)/gm)) out[`${m[1]}/${m[2]}`] = Number(m[3]);
  return out;
}

async function onStandby(pair: PgPair, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: pair.standby.url() });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

describe('reads from a streaming replica (DATABASE_READ_URL)', () => {
  let pair: PgPair;
  let server: PaydProcess;
  before(async () => {
    pair = await startPgPair();
    server = await startPayd({
      DATABASE_URL: pair.primary.url(), DATABASE_READ_URL: pair.standby.url(), PAYD_READ_MAX_LAG_MS: '1000', PAYD_SIM_INLINE: 'true',
    });
  });
  after(async () => {
    await server?.stop();
    pair?.close();
  });

  it('serves stale-allowed reads from the replica only within the staleness each allows, never money decisions', async () => {
    const m = await onboard(server.base);
    const pay = async (ref: string) => {
      const res = await call(server.base, 'POST', '/v2/payments', { ...m.auth, 'x-idempotency-key': ref }, {
        amount: 5000, currency: 'EUR', capture_mode: 'MANUAL', order: { reference: ref },
        split: [{ partner: 'card-sim', method: 'CARD', amount: 5000, instrument: card }],
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body!.authorization.status, 'AUTHORIZED');
      return res.body!.id as string;
    };
    const get = (id: string, cacheControl?: string) =>
      call(server.base, 'GET', `/v2/payments/${id}`, { ...m.auth, ...(cacheControl ? { 'cache-control': cacheControl } : {}) });
    const list = (path: string, cacheControl?: string) =>
      call(server.base, 'GET', path, { ...m.auth, ...(cacheControl ? { 'cache-control': cacheControl } : {}) });
    const delta = async <T>(fn: () => Promise<T>): Promise<{ result: T; d: Record<string, number> }> => {
      const before = await readCounts(server.base);
      const result = await fn();
      const after = await readCounts(server.base);
      const d: Record<string, number> = {};
      for (const k of Object.keys(after)) if (after[k]! - (before[k] ?? 0) > 0) d[k] = after[k]! - (before[k] ?? 0);
      return { result, d };
    };

    const p1 = await pay('rr-1');

    // A current replica serves GET with max-age, the lists and the events.
    for (let i = 0; ; i++) {
      const { result, d } = await delta(() => get(p1, 'max-age=60'));
      assert.equal(result.status, 200);
      if (d['replica/fresh']) break;
      assert.ok(i < 50, `the replica served a read within 5 s (${JSON.stringify(d)})`);
      await sleep(100);
    }
    {
      // The replica's pool has its own gauges beside the primary's (docs/operations.md).
      const text = await (await fetch(`${server.base}/metrics`)).text();
      const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1]);
      assert.equal(gauge('payd_db_replica_pool_max'), gauge('payd_db_pool_max'), 'the replica pool is PAYD_DB_POOL_SIZE too');
      assert.ok(gauge('payd_db_replica_pool_max') > 0);
      assert.ok(gauge('payd_db_replica_pool_connections\\{state="idle"\\}') + gauge('payd_db_replica_pool_connections\\{state="in_use"\\}') >= 1,
        'the connection that served the read is counted');
      assert.equal(gauge('payd_db_replica_pool_waiting'), 0);
    }
    {
      const { result, d } = await delta(() => list('/v2/payments'));
      assert.equal(result.status, 200);
      assert.deepEqual(result.body!.data.map((p: { id: string }) => p.id), [p1]);
      assert.equal(d['replica/fresh'], 1, JSON.stringify(d));
    }
    {
      const { result, d } = await delta(() => list('/v2/payments', 'no-cache'));
      assert.equal(result.status, 200);
      assert.equal(d['primary/fresh_asked'], 1, `no-cache reads the primary: ${JSON.stringify(d)}`);
    }

    // The replica stops replaying: the primary moves on without it.
    await onStandby(pair, 'SELECT pg_wal_replay_pause()');
    try {
      const cap = await call(server.base, 'POST', `/v2/payments/${p1}/captures`, { ...m.auth, 'x-idempotency-key': 'rr-cap' }, { amount: 5000 });
      assert.equal(cap.status, 200, JSON.stringify(cap.body));
      const p2 = await pay('rr-2');
      await sleep(1500);

      // max-age=1: the replica is more than 1 s stale, so the primary answers: captured.
      {
        const { result, d } = await delta(() => get(p1, 'max-age=1'));
        assert.equal(result.body!.amounts.total_captured, 5000);
        assert.equal(d['primary/lag'], 1, JSON.stringify(d));
      }
      // max-age=3600 allows the replica's view: the payment before its capture.
      {
        const { result, d } = await delta(() => get(p1, 'max-age=3600'));
        assert.equal(result.status, 200);
        assert.equal(result.body!.amounts.total_captured, 0, 'the replica\'s older version, within what the request allowed');
        assert.equal(d['replica/fresh'], 1, JSON.stringify(d));
      }
      // A payment the replica does not have yet is found on the primary, not a 404.
      {
        const { result, d } = await delta(() => get(p2, 'max-age=3600'));
        assert.equal(result.status, 200);
        assert.equal(result.body!.id, p2);
        assert.equal(d['primary/not_on_replica'], 1, JSON.stringify(d));
      }
      // An operation not on the replica yet, read back with max-age: found on the primary.
      {
        const op = cap.headers.get('x-created-operation-id')!;
        const res = await call(server.base, 'GET', `/v2/payments/${p1}/operations/${op}`, { ...m.auth, 'cache-control': 'max-age=3600' });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.equal(res.body!.kind, 'CAPTURE');
      }
      // Lists and events by default allow 1 s (PAYD_READ_MAX_LAG_MS): the primary, complete.
      {
        const { result, d } = await delta(() => list('/v2/payments'));
        assert.deepEqual(result.body!.data.map((p: { id: string }) => p.id), [p2, p1]);
        assert.equal(d['primary/lag'], 1, JSON.stringify(d));
        const events = await list('/v2/events?type=payment.captured');
        assert.equal(events.status, 200);
        assert.equal(events.body!.data.length, 1, 'the capture\'s event, read on the primary');
      }
      {
        const { result } = await delta(() => list('/v2/payments', 'max-age=3600'));
        assert.deepEqual(result.body!.data.map((p: { id: string }) => p.id), [p1], 'allowed an hour: the replica\'s list');
      }
      // A cursor the replica does not know yet is not refused: the primary pages from it.
      {
        const page = await list(`/v2/payments?starting_after=${p2}`, 'max-age=3600');
        assert.equal(page.status, 200, JSON.stringify(page.body));
        assert.deepEqual(page.body!.data.map((p: { id: string }) => p.id), [p1]);
      }
      // Money decisions read the primary: the replica still shows 5000 to capture, the
      // primary none, and a second capture is refused.
      const again = await call(server.base, 'POST', `/v2/payments/${p1}/captures`, { ...m.auth, 'x-idempotency-key': 'rr-cap-2' }, { amount: 1 });
      assert.ok(again.status >= 400 && again.status < 500, `${again.status} ${JSON.stringify(again.body)}`);
      const stale = await get(p1, 'max-age=3600');
      assert.equal(stale.body!.amounts.available_to_capture, 5000, 'what the replica says');
      assert.equal((await get(p1)).body!.amounts.available_to_capture, 0, 'what decided');
    } finally {
      await onStandby(pair, 'SELECT pg_wal_replay_resume()');
    }

    // Replay resumed: the replica catches up and serves the default reads again.
    for (let i = 0; ; i++) {
      const { result, d } = await delta(() => list('/v2/payments'));
      if (d['replica/fresh']) {
        assert.equal(result.body!.data.length, 2, 'caught up');
        break;
      }
      assert.ok(i < 50, `the replica served lists again within 5 s of resuming (${JSON.stringify(d)})`);
      await sleep(100);
    }

  });

  it('the dashboard reads its pages from the replica, and from the primary in answer to a post and just after it', async () => {
    // An app in this process on the same pair (the server above migrated the primary).
    const config = loadConfig({
      PAYD_ADMIN_TOKEN: ADMIN_TOKEN, PAYD_BASE_URL: 'http://localhost:8080', LOG_LEVEL: 'silent',
      DATABASE_URL: pair.primary.url(), DATABASE_READ_URL: pair.standby.url(), PAYD_READ_MAX_LAG_MS: '1000', PAYD_IDENTITY_ALLOW_HTTP_LOCALHOST: 'true',
    });
    const db = createPgDb(pair.primary.url(), 5);
    const app = await buildApp({ config, db, masterKey: Buffer.from(SERVER_MASTER_KEY, 'base64'), logger: false });
    await app.ready();
    const t = { app } as unknown as TestApp;
    t.adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };
    try {
      const entity = await app.inject({ method: 'POST', url: '/admin/v1/entities', headers: t.adminHeaders, payload: { name: 'Replica shop' } });
      const entityId = entity.json().id as string;
      await createMembers(t, [[{ entityId }, 'replica-admin@example.com', 'admin']]);
      const { signInAs, get, post } = dashboardClient(() => t);
      const cookie = await signInAs('replica-admin@example.com', `/dashboard/${entityId}/links`);
      const counts = async () => {
        const text = (await app.inject({ url: '/metrics' })).body;
        const n = (k: string) => Number(new RegExp(`^payd_db_reads_total\\{source="${k.split('/')[0]}",reason="${k.split('/')[1]}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
        return { replica: n('replica/fresh'), asked: n('primary/fresh_asked') };
      };

      // A page read while the replica is current: from the replica.
      for (let i = 0; ; i++) {
        const before = await counts();
        const home = await get(cookie, `/dashboard/${entityId}`);
        assert.equal(home.statusCode, 200);
        if ((await counts()).replica > before.replica) break;
        assert.ok(i < 50, 'the dashboard read the replica within 5 s');
        await new Promise((r) => setTimeout(r, 100));
      }
      // A post (a link created), and the page it leads to, read the primary: the new link shows.
      const list = await get(cookie, `/dashboard/${entityId}/links`);
      const form = Object.fromEntries(hiddenFields(/<form method="post" action="[^"]+\/links" [^]*?<\/form>/.exec(list.body)![0]));
      const before = await counts();
      const created = await post(cookie, `/dashboard/${entityId}/links`, { ...form, amount: '12.34', currency: 'EUR', order_reference: 'REPLICA-LINK' });
      assert.equal(created.statusCode, 303, created.body);
      const fresh = cookieValue(created, 'payd_dashboard_fresh');
      assert.ok(fresh, 'the post set the fresh-reads cookie');
      const after = await get(`${cookie}; ${fresh}`, String(created.headers.location));
      assert.equal(after.statusCode, 200);
      assert.match(after.body, /REPLICA-LINK/);
      const now = await counts();
      assert.equal(now.replica, before.replica, 'nothing read from the replica in answer to the post or just after it');
      assert.ok(now.asked >= 1 + before.asked, 'the page after the post read the primary');
    } finally {
      await app.close();
      await db.close();
    }
  });

  it('a replica that goes away costs reads nothing but their speed', async () => {
    const m = await onboard(server.base);
    const get = (id: string, cacheControl?: string) =>
      call(server.base, 'GET', `/v2/payments/${id}`, { ...m.auth, ...(cacheControl ? { 'cache-control': cacheControl } : {}) });
    const list = (path: string) => call(server.base, 'GET', path, m.auth);
    const created = await call(server.base, 'POST', '/v2/payments', { ...m.auth, 'x-idempotency-key': 'rr-gone' }, {
      amount: 700, currency: 'EUR', capture_mode: 'AUTOMATIC', order: { reference: 'rr-gone' },
      split: [{ partner: 'card-sim', method: 'CARD', amount: 700, instrument: card }],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const p1 = created.body!.id as string;
    pair.stopStandby();
    for (let i = 0; i < 5; i++) {
      const res = await get(p1, 'max-age=3600');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body!.id, p1);
      const l = await list('/v2/payments');
      assert.equal(l.status, 200);
      assert.deepEqual(l.body!.data.map((p: { id: string }) => p.id), [p1]);
    }
    const counts = await readCounts(server.base);
    assert.ok((counts['primary/replica_unusable'] ?? 0) + (counts['primary/replica_failed'] ?? 0) >= 1, JSON.stringify(counts));
    const lag = (await (await fetch(`${server.base}/metrics`)).text()).match(/^payd_db_replica_lag_seconds (\S+)/m);
    assert.match(lag?.[1] ?? '', /^nan$/i, 'no usable replica: no lag figure');
  });
});
