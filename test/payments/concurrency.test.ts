// Concurrency of money-moving requests: many parallel captures, refunds, voids and
// replays on one payment never take more than is available, in one app and in two apps
// over two connection pools on one database. The same over HTTP to real payd processes:
// concurrency-processes.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { createPgDb } from '../../src/platform/db/pg.ts';
import { ADMIN_TOKEN, createTestApp, expectProblem, getToken, MASTER_KEY, type Merchant, type TestApp } from '../helpers/app.ts';
import { createTestDb, type TestDb } from '../helpers/db.ts';
import { assertConsistent, partnerDid } from '../helpers/invariants.ts';

const ON_PG = Boolean(process.env.DATABASE_URL);
const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' };
const paymentBody = (amount: number) => ({ amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });
const statuses = (rs: Array<{ statusCode: number }>) => rs.map((r) => r.statusCode).join(',');

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
