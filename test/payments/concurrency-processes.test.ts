// Concurrent money operations over HTTP to real payd processes (`node bin/payd.js start`)
// sharing one database: parallel captures and replays of one key to two processes never
// take more than is available and run once (PGlite serves one process only: there one
// process takes the load of both clients), and a seeded random mix of captures, refunds
// and voids on card-only and split payments, with cards whose calls time out or are
// declined and with replayed keys, keeps every money invariant (test/helpers/invariants.ts).
// The same in one process (app.inject): concurrency.test.ts.
//
// The random mix: PAYD_FAULT_SEED replays a run (the seed is printed); PAYD_FAULT_OPS sets
// the number of operations (CI default 160; try 2000 on demand). It needs PostgreSQL: it
// creates its own database on DATABASE_URL's server, or on the local one.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, POSTGRES_URL, type TestDb } from '../helpers/db.ts';
import { apiAgreesWithLedger, assertConsistent, moneyInvariants, partnerDid } from '../helpers/invariants.ts';
import {
  call as plainCall, httpClient, onboard, onboardMerchant, type PaydProcess, poll, type ProcessDatabase, processDatabase, runningProcesses, startPayd, stopAll,
} from '../helpers/processes.ts';
import { seeded } from '../faults/db-fixture.ts';

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

  it('the processes stop cleanly', async () => {
    const procs = runningProcesses();
    assert.ok(procs.length >= 1);
    for (const p of procs) assert.equal(await p.stop('SIGTERM'), 0, p.output());
  });
});

describe('two payd processes on one database, plain HTTP clients', () => {
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
    const a = await startPayd(place.env);
    // Behind one load balancer every process has the same public URL (the token issuer).
    const b = testDb ? await startPayd({ ...place.env, PAYD_BASE_URL: a.base }) : a;
    try {
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
    } finally {
      if (b !== a) await b.stop();
      await a.stop();
    }
  });
});

// ---- a seeded random mix (formerly the fault suite's two-processes scenario) ----

const SEED = Number(process.env.PAYD_FAULT_SEED ?? Date.now() % 2 ** 31);
const OPS = Number(process.env.PAYD_FAULT_OPS ?? 160);
const PAYMENTS = Math.max(8, Math.ceil(OPS / 8));
const PARALLEL = 16;

const CARDS = [
  '4242424242424242', // approved
  '4000000000000416', // captures time out, found SUCCESS by a later sync
  '4000000000000341', // every capture declined
  '4000000000005126', // every refund declined
  '4000000000000408', // the authorization times out (settled later by a sync)
  '4000000000000119', // the acquirer answers a processing error
];
const cardNumbered = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2030', cvv: '123' });

describe(`two payd processes on one PostgreSQL database: random concurrent operations (seed ${SEED}, ${OPS} operations)`, () => {
  let testDb: TestDb;
  let a: PaydProcess;
  let b: PaydProcess;
  before(async () => {
    testDb = await createTestDb(POSTGRES_URL);
    // Partners keep records (so that their ledger can be compared with payd's); short
    // partner timeout and recovery grace so that time-outs settle within the test.
    const env = {
      DATABASE_URL: testDb.url!, PAYD_SIM_INLINE: 'false', PAYD_RECOVERY_INTERVAL_MS: '500',
      PAYD_PARTNER_TIMEOUT_MS: '2000', PAYD_RECOVERY_GRACE_SECONDS: '3',
    };
    a = await startPayd(env);
    b = await startPayd({ ...env, PAYD_BASE_URL: a.base });
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await testDb?.close();
  });

  it('keeps every money invariant', async (t) => {
    t.diagnostic(`two-processes: PAYD_FAULT_SEED=${SEED} PAYD_FAULT_OPS=${OPS}`);
    const random = seeded(SEED);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const m = await onboard(a.base);
    const servers = [a.base, b.base];

    const payments: Array<{ id: string; amount: number }> = [];
    for (let i = 0; i < PAYMENTS; i++) {
      const amount = 1000 + Math.floor(random() * 9000);
      const giftPart = random() < 0.4 ? Math.min(amount - 100, 500 + Math.floor(random() * 2000)) : 0;
      const split = [
        ...(giftPart ? [{ partner: 'gift-sim', method: 'GIFT_CARD', amount: giftPart, instrument: { type: 'GIFT_CARD', number: `60362800${String(SEED % 1e6).padStart(6, '0')}${String(i).padStart(4, '0')}` } }] : []),
        { partner: 'card-sim', method: 'CARD', amount: amount - giftPart, instrument: cardNumbered(pick(CARDS)) },
      ];
      const res = await plainCall(pick(servers), 'POST', '/v2/payments', { ...m.auth, 'x-idempotency-key': `pay-${SEED}-${i}` },
        { amount, currency: 'EUR', capture_mode: 'MANUAL', order: { reference: `two-proc-${i}` }, split });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      if (res.body!.authorization.status === 'AUTHORIZED') payments.push({ id: res.body!.id, amount });
    }
    assert.ok(payments.length > 0, 'some payments were authorized');

    // Random operations, PARALLEL at a time, to both processes; a fifth reuse an earlier key.
    const statuses = new Map<number, number>();
    const keys: Array<{ payment: string; key: string; kind: string; amount: number }> = [];
    let sent = 0;
    const one = async (): Promise<void> => {
      const reuse = keys.length > 0 && random() < 0.2;
      const op = reuse ? pick(keys) : (() => {
        const p = pick(payments);
        const kind = pick(['captures', 'captures', 'refunds', 'voids'] as const);
        const amount = 1 + Math.floor(random() * (p.amount / 2));
        const o = { payment: p.id, key: `op-${SEED}-${sent}`, kind, amount };
        keys.push(o);
        return o;
      })();
      sent++;
      const res = await plainCall(pick(servers), 'POST', `/v2/payments/${op.payment}/${op.kind}`, { ...m.auth, 'x-idempotency-key': op.key }, { amount: op.amount });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      assert.ok(res.status < 500, `${op.kind} answered ${res.status}: ${JSON.stringify(res.body)}`);
      if (res.status >= 400) assert.match(String(res.headers.get('content-type')), /^application\/problem\+json/);
    };
    let next = 0;
    await Promise.all(Array.from({ length: PARALLEL }, async () => {
      while (next++ < OPS) await one();
    }));

    // Settle: the recovery workers of both processes finish what timed out; GET (which
    // asks the partners) settles the rest. Nothing may stay PENDING.
    const report = await poll(() => moneyInvariants(testDb.db), (r) => r.pending === 0, { withinMs: 60_000, everyMs: 500 });
    const disagreements: string[] = [];
    for (const p of payments) {
      const got = await plainCall(pick(servers), 'GET', `/v2/payments/${p.id}`, { ...m.auth, 'cache-control': 'max-age=60' });
      assert.equal(got.status, 200);
      disagreements.push(...apiAgreesWithLedger(p.id, got.body!.amounts, report.ledger.get(p.id)));
    }
    t.diagnostic(`two-processes: ${payments.length} payments, ${OPS} operations, answers ${JSON.stringify(Object.fromEntries(statuses))}, pending after settle ${report.pending}, violations ${report.violations.length + disagreements.length}`);
    assert.deepEqual(report.violations, []);
    assert.deepEqual(disagreements, []);
    assert.equal(report.pending, 0, 'nothing PENDING once settled');
  });
});
