// Concurrency of money-moving requests: many parallel captures, refunds, voids and
// replays on one payment never take more than is available, in one app, in two apps
// over two connection pools on one database, and in real payd processes.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { createPgDb } from '../../src/platform/db/pg.ts';
import { ADMIN_TOKEN, createTestApp, expectProblem, getToken, MASTER_KEY, type Merchant, type TestApp } from '../helpers/app.ts';
import { createTestDb, type TestDb } from '../helpers/db.ts';
import { httpClient, onboardMerchant, type PaydProcess, type ProcessDatabase, processDatabase, runningProcesses, startPayd, stopAll } from '../helpers/processes.ts';

const ON_PG = Boolean(process.env.DATABASE_URL);
const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' };
const paymentBody = (amount: number) => ({ amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });
const statuses = (rs: Array<{ statusCode: number }>) => rs.map((r) => r.statusCode).join(',');

/** What the simulated acquirer itself recorded for the authorization of a payment: the partner's view. */
async function partnerLedger(db: Db, authorizationReference: string): Promise<Record<string, { n: number; total: number }>> {
  const { rows } = await db.query<{ kind: string; n: number; total: number }>(
    `SELECT kind, count(*)::int AS n, coalesce(sum(amount), 0)::int AS total FROM sim_partner_operations
      WHERE parent_ref = $1 AND status = 'SUCCEEDED' GROUP BY kind`,
    [authorizationReference],
  );
  return Object.fromEntries(rows.map((r) => [r.kind, { n: Number(r.n), total: Number(r.total) }]));
}

/**
 * What the partner did for an authorization, by kind. A partner that keeps records (the
 * simulators with PAYD_SIM_INLINE=false, like any partner across the network): its own
 * ledger. A partner answering inline keeps records only of the calls that took the
 * regular path (a request that lost the optimistic version race goes there, under the
 * row lock): each of those must be a successful transaction in payd's ledger, and payd's
 * ledger is the record of the rest.
 */
async function partnerDid(db: Db, inline: boolean, paymentId: string, authorizationReference: string): Promise<Record<string, { n: number; total: number }>> {
  if (!inline) return partnerLedger(db, authorizationReference);
  const { rows: recorded } = await db.query<{ key: string }>(
    `SELECT key FROM sim_partner_operations WHERE parent_ref = $1 AND status = 'SUCCEEDED'`, [authorizationReference]);
  const { rows: ours } = await db.query<{ partner_key: string }>(
    `SELECT partner_key FROM partner_transactions WHERE payment_id = $1 AND kind <> 'AUTHORIZATION' AND status = 'SUCCESS'`, [paymentId]);
  const known = new Set(ours.map((r) => r.partner_key));
  for (const r of recorded) assert.ok(known.has(r.key), `the partner did ${r.key}, which payd's ledger does not show as succeeded`);
  const { rows } = await db.query<{ kind: string; n: number; total: number }>(
    `SELECT kind, count(*)::int AS n, coalesce(sum(amount), 0)::int AS total FROM partner_transactions
      WHERE payment_id = $1 AND kind <> 'AUTHORIZATION' AND status = 'SUCCESS' GROUP BY kind`,
    [paymentId],
  );
  return Object.fromEntries(rows.map((r) => [r.kind, { n: Number(r.n), total: Number(r.total) }]));
}

function assertConsistent(p: Record<string, any>): void {
  const a = p.amounts;
  assert.ok(a.total_captured + a.total_voided <= a.total_authorized, `captured ${a.total_captured} + voided ${a.total_voided} <= authorized ${a.total_authorized}`);
  assert.ok(a.total_refunded <= a.total_captured);
  assert.equal(a.available_to_capture, a.total_authorized - a.total_captured - a.total_voided);
  assert.equal(a.available_to_refund, a.total_captured - a.total_refunded);
  const sum = (ops: any[]) => ops.filter((o) => o.status === 'SUCCESS').reduce((s, o) => s + o.amount, 0);
  assert.equal(sum(p.captures), a.total_captured);
  assert.equal(sum(p.voids), a.total_voided);
  assert.equal(sum(p.refunds), a.total_refunded);
  for (const o of [...p.captures, ...p.voids, ...p.refunds]) assert.notEqual(o.status, 'PENDING', `operation ${o.id} left PENDING`);
}

for (const inline of [true, false]) describe(`parallel operations on one payment (one app, partners ${inline ? 'answering inline' : 'keeping records'})`, () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp({ simInline: inline });
    m = await t.createMerchant('Concurrency');
  });
  after(() => t.close());

  const pay = async (amount: number) => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: paymentBody(amount) });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().authorization.status, 'AUTHORIZED');
    return res.json();
  };
  const op = (id: string, kind: string, payload?: object, key?: string) =>
    t.app.inject({ method: 'POST', url: `/v2/payments/${id}/${kind}`, headers: { ...m.auth, ...(key ? { 'x-idempotency-key': key } : {}) }, ...(payload ? { payload } : {}) });
  const read = async (id: string) => (await t.app.inject({ url: `/v2/payments/${id}`, headers: m.auth })).json();

  it('20 parallel captures of 1000 on 10000: exactly 10 succeed, the rest 400, never more than authorized', async () => {
    const p = await pay(10_000);
    const results = await Promise.all(Array.from({ length: 20 }, () => op(p.id, 'captures', { amount: 1000 })));
    const ok = results.filter((r) => r.statusCode === 200);
    const refused = results.filter((r) => r.statusCode === 400);
    assert.equal(ok.length, 10, statuses(results));
    assert.equal(refused.length, 10, statuses(results));
    for (const r of refused) {
      expectProblem(r, 400);
      assert.equal(r.headers['x-created-operation-id'], undefined);
    }
    const opIds = ok.map((r) => r.headers['x-created-operation-id'] as string);
    assert.equal(new Set(opIds).size, 10, 'each success created its own operation');
    for (const r of ok) {
      const mine = r.json().captures.find((o: any) => o.id === r.headers['x-created-operation-id']);
      assert.equal(mine.status, 'SUCCESS');
      assert.equal(mine.amount, 1000);
      assert.ok(r.json().amounts.total_captured <= 10_000);
    }
    const final = await read(p.id);
    assert.equal(final.amounts.total_captured, 10_000);
    assert.equal(final.amounts.available_to_capture, 0);
    assert.deepEqual(final.captures.map((o: any) => o.id).sort(), [...opIds].sort());
    assertConsistent(final);
    const ledger = await partnerDid(t.testDb.db, inline, p.id, final.authorization.partner_transactions[0].partner_reference);
    assert.deepEqual(ledger.CAPTURE, { n: 10, total: 10_000 }, 'the acquirer captured exactly the authorized amount');
    // And one more capture after the storm is refused too.
    expectProblem(await op(p.id, 'captures', { amount: 1 }), 400);
  });

  it('parallel replays of one key: exactly one 200, the rest 409 naming the same operation', async () => {
    const p = await pay(10_000);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => op(p.id, 'captures', { amount: 500 + i }, 'one-key')));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1, statuses(results));
    const opId = ok[0]!.headers['x-created-operation-id'] as string;
    const conflicts = results.filter((r) => r.statusCode === 409);
    assert.equal(conflicts.length, 11, statuses(results));
    for (const r of conflicts) {
      const body = expectProblem(r, 409);
      assert.equal(body.type, 'urn:eu.service:write-conflict');
      assert.equal(body.title, 'Idempotency violation');
      assert.equal(body.instance, `/v2/payments/${p.id}/captures`);
      assert.equal(body.resource_id, opId);
    }
    const final = await read(p.id);
    assert.equal(final.captures.length, 1);
    assert.equal(final.captures[0].id, opId);
    assert.equal(final.captures[0].status, 'SUCCESS');
    assert.equal(final.amounts.total_captured, ok[0]!.json().captures[0].amount);
    assertConsistent(final);
  });

  it('parallel replays of one key across captures, refunds and voids: one operation in all', async () => {
    const p = await pay(10_000);
    assert.equal((await op(p.id, 'captures', { amount: 5000 })).statusCode, 200);
    const kinds = ['captures', 'refunds', 'voids'];
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => op(p.id, kinds[i % 3]!, { amount: 1000 }, 'mixed-key')));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1, statuses(results));
    const opId = ok[0]!.headers['x-created-operation-id'];
    assert.ok(results.filter((r) => r.statusCode === 409).every((r) => r.json().resource_id === opId));
    assert.equal(results.filter((r) => r.statusCode === 409).length, 11);
    const final = await read(p.id);
    assert.equal(final.captures.length + final.refunds.length + final.voids.length, 2);
    assertConsistent(final);
  });

  it('parallel payment creations with one key: one payment, the rest 409 naming it', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, () =>
      t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'x-idempotency-key': 'order-parallel' }, payload: paymentBody(3000) })));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1, statuses(results));
    const id = ok[0]!.json().id;
    for (const r of results.filter((x) => x.statusCode !== 200)) assert.equal(expectProblem(r, 409).resource_id, id);
    const { rows } = await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments WHERE idempotency_key = $1', ['order-parallel']);
    assert.equal(rows[0]!.n, 1);
  });

  it('parallel captures and voids never make captured + voided exceed authorized', async () => {
    const p = await pay(10_000);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => op(p.id, i % 2 ? 'voids' : 'captures', { amount: 1500 })));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.ok(results.every((r) => r.statusCode === 200 || r.statusCode === 400), statuses(results));
    // 6 x 1500 = 9000 fit; a seventh would need 10500.
    assert.equal(ok.length, 6, statuses(results));
    const final = await read(p.id);
    assert.equal(final.amounts.total_captured + final.amounts.total_voided, 9000);
    assert.equal(final.amounts.available_to_capture, 1000);
    assertConsistent(final);
    const ledger = await partnerDid(t.testDb.db, inline, p.id, final.authorization.partner_transactions[0].partner_reference);
    assert.equal((ledger.CAPTURE?.total ?? 0) + (ledger.VOID?.total ?? 0), 9000);
  });

  it('parallel captures and whole-amount voids: exactly one void, captured + voided = authorized', async () => {
    const p = await pay(10_000);
    const jobs = Array.from({ length: 16 }, (_, i) => (i % 4 === 3 ? op(p.id, 'voids') : op(p.id, 'captures', { amount: 1000 })));
    const results = await Promise.all(jobs);
    assert.ok(results.every((r) => r.statusCode === 200 || r.statusCode === 400), statuses(results));
    const final = await read(p.id);
    assert.equal(final.voids.length, 1, 'the first void takes what is left; later ones find nothing');
    assert.equal(final.amounts.total_captured + final.amounts.total_voided, 10_000);
    assert.equal(final.amounts.available_to_capture, 0);
    assertConsistent(final);
  });

  it('parallel refunds never refund more than was captured', async () => {
    const p = await pay(10_000);
    assert.equal((await op(p.id, 'captures', { amount: 7000 })).statusCode, 200);
    const results = await Promise.all(Array.from({ length: 15 }, () => op(p.id, 'refunds', { amount: 1000 })));
    assert.equal(results.filter((r) => r.statusCode === 200).length, 7, statuses(results));
    assert.equal(results.filter((r) => r.statusCode === 400).length, 8, statuses(results));
    const final = await read(p.id);
    assert.equal(final.amounts.total_refunded, 7000);
    assert.equal(final.amounts.available_to_refund, 0);
    assertConsistent(final);
  });

  it('parallel reads of a split whose card failed 3-D Secure: every read answers, the gift card is voided once', async () => {
    // Gift card first (authorized), then a card that needs a challenge; the shopper fails it.
    const gift = { type: 'GIFT_CARD', number: `6036${String(Date.now()).slice(-8)}4321` };
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: {
      amount: 10_000, currency: 'EUR', split: [
        { partner: 'gift-sim', method: 'GIFT_CARD', amount: 3000, instrument: gift },
        { partner: 'card-sim', method: 'CARD', amount: 7000, instrument: { ...card, number: '4000000000003220' } },
      ] } });
    const p = res.json();
    assert.equal(p.authorization.status, 'PENDING', res.body);
    const cardTx = p.authorization.partner_transactions.find((x: any) => x.method === 'CARD');
    const acs = t.app.services.partners.get('card-sim') as unknown as { completeChallenge(ref: string, passed: boolean): Promise<unknown> };
    await acs.completeChallenge(cardTx.partner_reference, false);
    // Several readers notice the refusal at once (the shopper's browser, the merchant's poller...).
    const reads = await Promise.all(Array.from({ length: 6 }, () => t.app.inject({ url: `/v2/payments/${p.id}`, headers: m.auth })));
    assert.deepEqual(reads.map((r) => r.statusCode), [200, 200, 200, 200, 200, 200], reads.find((r) => r.statusCode !== 200)?.body);
    const final = await read(p.id);
    assert.equal(final.authorization.status, 'REFUSED');
    assert.equal(final.voids.length, 1, 'one reversal');
    assert.equal(final.voids[0].triggered_by, 'SYSTEM');
    assert.equal(final.voids[0].status, 'SUCCESS');
    assert.equal(final.amounts.total_voided, 3000);
    const giftAuth = final.authorization.partner_transactions.find((x: any) => x.method === 'GIFT_CARD');
    const { rows } = await t.testDb.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM sim_partner_operations WHERE kind = 'VOID' AND parent_ref = $1`, [giftAuth.partner_reference]);
    assert.equal(rows[0]!.n, 1, 'the gift-card processor received one void');
  });
});

for (const inline of [true, false]) describe(`${ON_PG ? 'two payd apps over two connection pools on one PostgreSQL database' : 'two payd apps sharing one PGlite database'} (partners ${inline ? 'answering inline' : 'keeping records'})`, () => {
  let testDb: TestDb;
  let second: Db | undefined;
  let a: FastifyInstance;
  let b: FastifyInstance;
  let auth: { authorization: string };

  before(async () => {
    testDb = await createTestDb();
    second = testDb.url ? createPgDb(testDb.url, 20) : undefined;
    const config = loadConfig({ PAYD_ADMIN_TOKEN: ADMIN_TOKEN, PAYD_BASE_URL: 'http://payd.test', LOG_LEVEL: 'silent', PAYD_SIM_INLINE: String(inline) });
    a = await buildApp({ config, db: testDb.db, masterKey: MASTER_KEY, logger: false });
    await a.ready();
    b = await buildApp({ config, db: second ?? testDb.db, masterKey: MASTER_KEY, logger: false });
    await b.ready();
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const e = await a.inject({ method: 'POST', url: '/admin/v1/entities', headers: admin, payload: { name: 'Two apps' } });
    assert.equal(e.statusCode, 201, e.body);
    const k = await b.inject({ method: 'POST', url: `/admin/v1/entities/${e.json().id}/api-keys`, headers: admin });
    assert.equal(k.statusCode, 201, k.body);
    auth = { authorization: `Bearer ${await getToken(a, k.json().api_key)}` };
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await second?.close();
    await testDb?.close();
  });

  const capture = (app: FastifyInstance, id: string, amount: number, key?: string) =>
    app.inject({ method: 'POST', url: `/v2/payments/${id}/captures`, headers: { ...auth, ...(key ? { 'x-idempotency-key': key } : {}) }, payload: { amount } });

  it('concurrent captures split across both apps never capture more than authorized', async () => {
    const created = await a.inject({ method: 'POST', url: '/v2/payments', headers: auth, payload: paymentBody(10_000) });
    assert.equal(created.json().authorization.status, 'AUTHORIZED', created.body);
    const id = created.json().id;
    // A token issued by one app is accepted by the other (same keys, same issuer).
    assert.equal((await b.inject({ url: `/v2/payments/${id}`, headers: auth })).statusCode, 200);
    const results: LightMyRequestResponse[] = await Promise.all(Array.from({ length: 30 }, (_, i) => capture(i % 2 ? b : a, id, 700)));
    // 14 x 700 = 9800 fit; a fifteenth would need 10500.
    assert.equal(results.filter((r) => r.statusCode === 200).length, 14, statuses(results));
    assert.equal(results.filter((r) => r.statusCode === 400).length, 16, statuses(results));
    const successByApp = [0, 1].map((parity) => results.filter((r, i) => i % 2 === parity && r.statusCode === 200).length);
    assert.equal(successByApp[0]! + successByApp[1]!, 14);
    const final = (await b.inject({ url: `/v2/payments/${id}`, headers: auth })).json();
    assert.equal(final.amounts.total_captured, 9800);
    assert.equal(final.amounts.available_to_capture, 200);
    assert.equal(final.captures.length, 14);
    assertConsistent(final);
    const ledger = await partnerDid(testDb.db, inline, id, final.authorization.partner_transactions[0].partner_reference);
    assert.deepEqual(ledger.CAPTURE, { n: 14, total: 9800 });
  });

  it('parallel replays of one key across both apps run the capture once', async () => {
    const created = await b.inject({ method: 'POST', url: '/v2/payments', headers: auth, payload: paymentBody(5000) });
    const id = created.json().id;
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => capture(i % 2 ? a : b, id, 2500, 'both-apps')));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1, statuses(results));
    const opId = ok[0]!.headers['x-created-operation-id'];
    for (const r of results.filter((x) => x.statusCode !== 200)) assert.equal(expectProblem(r, 409).resource_id, opId);
    const final = (await a.inject({ url: `/v2/payments/${id}`, headers: auth })).json();
    assert.equal(final.amounts.total_captured, 2500);
    assert.equal(final.captures.length, 1);
  });
});

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
