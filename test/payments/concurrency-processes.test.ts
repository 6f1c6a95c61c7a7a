// Concurrent money operations over HTTP to real payd processes (`node bin/payd.js start`)
// sharing one database: parallel captures and replays of one key to two processes never
// take more than is available and run once (PGlite serves one process only: there one
// process takes the load of both clients). The same in one process (app.inject):
// concurrency.test.ts; a seeded random mix on two processes: concurrency-random.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestDb } from '../helpers/db.ts';
import { assertConsistent, partnerDid } from '../helpers/invariants.ts';
import {
  call as plainCall, httpClient, onboard, onboardMerchant, type PaydProcess, type ProcessDatabase, processDatabase, runningProcesses, startPayd, stopAll,
} from '../helpers/processes.ts';

const ON_PG = Boolean(process.env.DATABASE_URL);
const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' };
const paymentBody = (amount: number) => ({ amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });

// ---- real processes ----

const call = httpClient(20_000);

for (const inline of [true, false]) describe(`${ON_PG ? 'two payd processes on one PostgreSQL database' : 'one payd process on PGlite (serves one process) under concurrent HTTP load'} (partners ${inline ? 'answering inline' : 'keeping records'})`, () => {
  let place: ProcessDatabase;
  let testDb: TestDb | undefined;
  let a: PaydProcess;
  let b: PaydProcess;
  let auth: Record<string, string>;

  before(async () => {
    place = await processDatabase('payd-concurrency-');
    testDb = place.testDb;
    const dbEnv: Record<string, string> = { ...place.env, PAYD_SIM_INLINE: String(inline) };
    a = await startPayd(dbEnv, { readyWithinMs: 45_000 });
    // Behind one load balancer every process has the same public URL (the token issuer).
    b = ON_PG ? await startPayd({ ...dbEnv, PAYD_BASE_URL: a.base }, { readyWithinMs: 45_000 }) : a;
    // The entity is created through one process, its key and token through the other.
    ({ auth } = await onboardMerchant(a.base, { name: 'Processes', keysVia: b.base }));
  });
  after(async () => {
    await stopAll('SIGTERM');
    await place?.close();
  });

  it('concurrent captures over HTTP to both never capture more than authorized', async () => {
    const p = await call(a.base, 'POST', '/v2/payments', auth, paymentBody(10_000));
    assert.equal(p.status, 200, JSON.stringify(p.body));
    assert.equal(p.body!.authorization.status, 'AUTHORIZED');
    const id = p.body!.id;
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) =>
      call(i % 2 ? b.base : a.base, 'POST', `/v2/payments/${id}/captures`, auth, { amount: 600 })));
    const codes = results.map((r) => r.status).join(',');
    // 16 x 600 = 9600 fit; a seventeenth would need 10200.
    assert.equal(results.filter((r) => r.status === 200).length, 16, codes);
    assert.equal(results.filter((r) => r.status === 400).length, 24, codes);
    for (const r of results.filter((x) => x.status === 400)) {
      assert.match(String(r.headers.get('content-type')), /^application\/problem\+json/);
    }
    const final = await call(b.base, 'GET', `/v2/payments/${id}`, auth);
    assert.equal(final.body!.amounts.total_captured, 9600);
    assert.equal(final.body!.amounts.available_to_capture, 400);
    assert.equal(final.body!.captures.length, 16);
    assertConsistent(final.body!);
    if (testDb) {
      const ledger = await partnerDid(testDb.db, inline, id, final.body!.authorization.partner_transactions[0].partner_reference);
      assert.deepEqual(ledger.CAPTURE, { n: 16, total: 9600 });
    }
  });

  it('concurrent replays of one key over HTTP to both: one capture, the rest 409 naming it', async () => {
    const p = await call(b.base, 'POST', '/v2/payments', auth, paymentBody(8000));
    const id = p.body!.id;
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      call(i % 2 ? a.base : b.base, 'POST', `/v2/payments/${id}/captures`, { ...auth, 'x-idempotency-key': 'proc-key' }, { amount: 8000 })));
    const ok = results.filter((r) => r.status === 200);
    assert.equal(ok.length, 1, results.map((r) => r.status).join(','));
    const opId = ok[0]!.headers.get('x-created-operation-id');
    for (const r of results.filter((x) => x.status !== 200)) {
      assert.equal(r.status, 409);
      assert.equal(r.body!.type, 'urn:eu.service:write-conflict');
      assert.equal(r.body!.resource_id, opId);
    }
    const final = await call(a.base, 'GET', `/v2/payments/${id}`, auth);
    assert.equal(final.body!.amounts.total_captured, 8000);
    assert.equal(final.body!.captures.length, 1);
  });

  // (With the default partners, as it was written: once.)
  if (inline) it('two processes on one PostgreSQL never capture more than authorized', async () => {
    // PGlite serves one process only (documented), so there the two "processes" are
    // one server taking the concurrent load from both clients.
    const m = await onboard(a.base);
    const p = await plainCall(a.base, 'POST', '/v2/payments', m.auth, paymentBody(10_000));
    assert.equal(p.body!.authorization.status, 'AUTHORIZED');
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) =>
      plainCall(i % 2 ? b.base : a.base, 'POST', `/v2/payments/${p.body!.id}/captures`, m.auth, { amount: 500 })));
    const ok = results.filter((r) => r.status === 200);
    assert.equal(ok.length, 20, `statuses: ${results.map((r) => r.status).join(',')}`);
    assert.ok(results.every((r) => r.status === 200 || r.status === 400), JSON.stringify(results.filter((r) => r.status !== 200 && r.status !== 400).map((r) => r.body)));
    const final = await plainCall(b.base, 'GET', `/v2/payments/${p.body!.id}`, m.auth);
    assert.equal(final.body!.amounts.total_captured, 10_000);
    assert.equal(final.body!.amounts.available_to_capture, 0);
    assert.equal(final.body!.captures.length, 20);
  });

  it('the processes stop cleanly', async () => {
    const procs = runningProcesses();
    assert.ok(procs.length >= 1);
    for (const p of procs) assert.equal(await p.stop('SIGTERM'), 0, p.output());
  });
});
