// Real payd processes: two servers on one database never over-capture, and a process
// killed in the middle of a capture loses nothing and doubles nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestDb } from '../helpers/db.ts';
import { poll, type ProcessDatabase, processDatabase } from '../helpers/processes.ts';
import { call, onboard, startServer } from '../helpers/server.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' };
const paymentBody = (amount: number) => ({ amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });

/** Until a capture of the payment is recorded (stored read: no partner is asked), so that a signal finds it in the partner call. */
const captureRecorded = (base: string, auth: Record<string, string>, paymentId: string) => poll(
  async () => (await call(base, 'GET', `/v2/payments/${paymentId}`, { ...auth, 'cache-control': 'max-age=60' })).body!.captures[0],
  (c) => c !== undefined, { withinMs: 30_000, everyMs: 25 });

describe('payd processes', () => {
  /** Where the spawned servers keep their data: the test's PostgreSQL database, or a PGlite data dir. */
  let place: ProcessDatabase;
  let testDb: TestDb | undefined;
  before(async () => {
    place = await processDatabase('payd-proc-');
    testDb = place.testDb;
  });
  after(async () => {
    await place?.close();
  });

  it('two processes on one PostgreSQL never capture more than authorized', async () => {
    // PGlite serves one process only (documented), so there the two "processes" are
    // one server taking the concurrent load from both clients.
    const a = await startServer(place.env);
    // Behind one load balancer every process has the same public URL (the token issuer).
    const b = testDb ? await startServer({ ...place.env, PAYD_BASE_URL: a.base }) : a;
    try {
      const m = await onboard(a.base);
      const p = await call(a.base, 'POST', '/v2/payments', m.auth, paymentBody(10_000));
      assert.equal(p.body!.authorization.status, 'AUTHORIZED');
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) =>
        call(i % 2 ? b.base : a.base, 'POST', `/v2/payments/${p.body!.id}/captures`, m.auth, { amount: 500 })));
      const ok = results.filter((r) => r.status === 200);
      assert.equal(ok.length, 20, `statuses: ${results.map((r) => r.status).join(',')}`);
      assert.ok(results.every((r) => r.status === 200 || r.status === 400), JSON.stringify(results.filter((r) => r.status !== 200 && r.status !== 400).map((r) => r.body)));
      const final = await call(b.base, 'GET', `/v2/payments/${p.body!.id}`, m.auth);
      assert.equal(final.body!.amounts.total_captured, 10_000);
      assert.equal(final.body!.amounts.available_to_capture, 0);
      assert.equal(final.body!.captures.length, 20);
    } finally {
      if (b !== a) await b.stop();
      await a.stop();
    }
  });

  it('SIGTERM lets an in-flight capture finish, then exits 0', async () => {
    const server = await startServer({ ...place.env, PAYD_SIM_LATENCY_MS: '800' });
    const m = await onboard(server.base);
    const p = await call(server.base, 'POST', '/v2/payments', m.auth, paymentBody(5000));
    const inFlight = call(server.base, 'POST', `/v2/payments/${p.body!.id}/captures`, m.auth, { amount: 5000 });
    await captureRecorded(server.base, m.auth, p.body!.id);
    const exit = server.stop('SIGTERM');
    const res = await inFlight;
    assert.equal(res.status, 200);
    assert.equal(res.body!.captures[0].status, 'SUCCESS');
    assert.equal(await exit, 0);
    await assert.rejects(fetch(`${server.base}/healthz`), 'no longer accepting connections');
  });

  it('a process killed during a capture: the replay answers 409, recovery completes it exactly once', async () => {
    let server = await startServer(place.env);
    const PORT = new URL(server.base).port;
    const m = await onboard(server.base);
    const p = await call(server.base, 'POST', '/v2/payments', m.auth, paymentBody(10_000));
    assert.equal(p.body!.authorization.status, 'AUTHORIZED');
    assert.equal(await server.stop(), 0);

    // Slow partner: the capture is recorded PENDING, then the process dies mid-call.
    server = await startServer({ ...place.env, PORT, PAYD_SIM_LATENCY_MS: '3000' });
    const key = { ...m.auth, 'x-idempotency-key': 'capture-crash-1' };
    const inFlight = call(server.base, 'POST', `/v2/payments/${p.body!.id}/captures`, key, { amount: 4000 }).catch((e: Error) => e);
    await captureRecorded(server.base, m.auth, p.body!.id);
    await server.stop('SIGKILL');
    const lost = await inFlight;
    assert.ok(lost instanceof Error, `the first call lost its response: ${JSON.stringify(lost)}`);

    server = await startServer({ ...place.env, PORT, PAYD_RECOVERY_GRACE_SECONDS: '1', PAYD_PARTNER_TIMEOUT_MS: '500', PAYD_RECOVERY_INTERVAL_MS: '300' });
    try {
      const replay = await call(server.base, 'POST', `/v2/payments/${p.body!.id}/captures`, key, { amount: 4000 });
      assert.equal(replay.status, 409);
      assert.equal(replay.body!.type, 'urn:eu.service:write-conflict');
      const opId = replay.body!.resource_id as string;
      const payment = await poll(
        async () => (await call(server.base, 'GET', `/v2/payments/${p.body!.id}`, { ...m.auth, 'cache-control': 'max-age=0' })).body,
        (v) => v!.captures[0]?.status === 'SUCCESS', { withinMs: 20_000, everyMs: 200 });
      assert.equal(payment!.captures.length, 1);
      assert.equal(payment!.captures[0].id, opId);
      assert.equal(payment!.captures[0].status, 'SUCCESS');
      assert.equal(payment!.amounts.total_captured, 4000);
      assert.equal(payment!.amounts.available_to_capture, 6000);
      // A second replay still names the same operation; nothing ran twice.
      const again = await call(server.base, 'POST', `/v2/payments/${p.body!.id}/captures`, key, { amount: 4000 });
      assert.equal(again.body!.resource_id, opId);
      if (testDb) {
        const { rows } = await testDb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM sim_partner_operations WHERE kind = 'CAPTURE' AND key LIKE $1`, [`${opId}:%`]);
        assert.equal(rows[0]!.n, 1, 'the acquirer received the capture exactly once');
      }
    } finally {
      await server.stop();
    }
  });
});
