// Idempotency keys (spec, Errors item 5) and concurrency: replays answered 409 with
// resource_id, keys scoped to the payment, replays held while the first call is in
// flight (and not held forever), parallel captures never taking more than authorized,
// and the recovery step settling a capture whose answer was lost.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function helpers(get: () => { t: TestApp; m: Merchant }) {
  const pay = async (amount: number, number?: string) => {
    const { t, m } = get();
    const res = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: m.auth,
      payload: { amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) }] },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().authorization.status, 'AUTHORIZED', res.body);
    return res.json();
  };
  const op = (id: string, kind: string, payload: object, key?: string) => {
    const { t, m } = get();
    return t.app.inject({
      method: 'POST', url: `/v2/payments/${id}/${kind}`,
      headers: { ...m.auth, ...(key ? { 'x-idempotency-key': key } : {}) }, payload,
    });
  };
  const stored = async (id: string) => {
    const { t, m } = get();
    return (await t.app.inject({ url: `/v2/payments/${id}`, headers: { ...m.auth, 'cache-control': 'max-age=60' } })).json();
  };
  return { pay, op, stored };
}

/** Asserts the spec's idempotency violation body. */
function expectViolation(res: LightMyRequestResponse, instance: string, resourceId: string) {
  const p = expectProblem(res, 409);
  assert.equal(p.type, 'urn:eu.service:write-conflict');
  assert.equal(p.title, 'Idempotency violation');
  assert.equal(p.status, 409);
  assert.equal(p.instance, instance);
  assert.equal(p.resource_id, resourceId);
  return p;
}

describe('idempotency keys', () => {
  let t: TestApp;
  let m: Merchant;
  const { pay, op, stored } = helpers(() => ({ t, m }));

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('idem');
  });
  after(() => t.close());

  it('answers a replayed payment creation 409 naming the first payment', async () => {
    const payload = { amount: 1500, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 1500, instrument: card() }] };
    const headers = { ...m.auth, 'x-idempotency-key': 'create-order-42' };
    const first = await t.app.inject({ method: 'POST', url: '/v2/payments', headers, payload });
    assert.equal(first.statusCode, 200, first.body);
    const id = first.json().id;
    const replay = await t.app.inject({ method: 'POST', url: '/v2/payments', headers, payload });
    expectViolation(replay, '/v2/payments', id);
    // A different body with the same key is still a replay.
    const different = await t.app.inject({ method: 'POST', url: '/v2/payments', headers, payload: { ...payload, amount: 1600, split: [{ ...payload.split[0], amount: 1600 }] } });
    expectViolation(different, '/v2/payments', id);
    const { rows } = await t.testDb.db.query<{ n: number | string }>(`SELECT count(*) AS n FROM payments WHERE entity_id = $1 AND idempotency_key = 'create-order-42'`, [m.entityId]);
    assert.equal(Number(rows[0]!.n), 1);
    // Reading resource_id back gives the outcome of the first call.
    assert.equal((await stored(id)).authorization.status, 'AUTHORIZED');
  });

  it('answers a capture key reused for a refund 409 naming the capture, and lets another payment use the key', async () => {
    const p = await pay(5000);
    const capture = await op(p.id, 'captures', { amount: 3000 }, 'op-key-1');
    assert.equal(capture.statusCode, 200, capture.body);
    const captureId = String(capture.headers['x-created-operation-id']);
    assert.match(captureId, UUID);
    assert.equal(capture.json().captures[0].id, captureId);

    const refund = await op(p.id, 'refunds', { amount: 100 }, 'op-key-1');
    expectViolation(refund, `/v2/payments/${p.id}/refunds`, captureId);
    const recapture = await op(p.id, 'captures', { amount: 1000 }, 'op-key-1');
    expectViolation(recapture, `/v2/payments/${p.id}/captures`, captureId);
    const after = await stored(p.id);
    assert.equal(after.refunds.length, 0);
    assert.equal(after.captures.length, 1);
    assert.equal(after.amounts.total_captured, 3000);

    const q = await pay(2000);
    const elsewhere = await op(q.id, 'captures', { amount: 2000 }, 'op-key-1');
    assert.equal(elsewhere.statusCode, 200, elsewhere.body);
    assert.notEqual(elsewhere.headers['x-created-operation-id'], captureId);
    assert.equal(elsewhere.json().amounts.total_captured, 2000);
  });

  it('runs one of 10 parallel requests with one key and answers the nine others 409 with the same resource_id', async () => {
    const p = await pay(8000);
    const all = await Promise.all(Array.from({ length: 10 }, () => op(p.id, 'captures', { amount: 500 }, 'parallel-key')));
    const ok = all.filter((r) => r.statusCode === 200);
    const conflicts = all.filter((r) => r.statusCode === 409);
    assert.equal(ok.length, 1, all.map((r) => `${r.statusCode} ${r.body}`).join('\n'));
    assert.equal(conflicts.length, 9, all.map((r) => `${r.statusCode} ${r.body}`).join('\n'));
    const opId = String(ok[0]!.headers['x-created-operation-id']);
    for (const c of conflicts) expectViolation(c, `/v2/payments/${p.id}/captures`, opId);
    const after = await stored(p.id);
    assert.equal(after.captures.length, 1);
    assert.equal(after.amounts.total_captured, 500);
  });

  it('never captures more than authorized under 20 parallel captures', async () => {
    const p = await pay(10000);
    const all = await Promise.all(Array.from({ length: 20 }, () => op(p.id, 'captures', { amount: 1000 })));
    const ok = all.filter((r) => r.statusCode === 200);
    const refused = all.filter((r) => r.statusCode !== 200);
    assert.equal(ok.length, 10, all.map((r) => `${r.statusCode} ${r.body}`).join('\n'));
    for (const r of refused) expectProblem(r, 400);
    const after = await stored(p.id);
    assert.equal(after.amounts.total_captured, 10000);
    assert.equal(after.amounts.available_to_capture, 0);
    assert.equal(after.captures.length, 10);
    assert.ok(after.captures.every((c: any) => c.status === 'SUCCESS'));
    assert.equal(after.overview.captured, 'FULLY');
  });

  it('recovers a capture whose answer was lost: PENDING, then SUCCESS after recovery.runOnce', async () => {
    const p = await pay(4000, '4000000000000416');
    const res = await op(p.id, 'captures', { amount: 4000 }, 'lost-answer');
    assert.equal(res.statusCode, 200, res.body);
    const opId = res.headers['x-created-operation-id'];
    const c = res.json().captures[0];
    assert.equal(c.id, opId);
    assert.equal(c.status, 'PENDING');
    assert.equal(c.partner_transactions[0].status, 'PENDING');
    assert.equal(res.json().amounts.total_captured, 0);
    // Still reserved: a second capture cannot take the amount in flight.
    expectProblem(await op(p.id, 'captures', { amount: 1 }), 400);

    await sleep(1200);
    await t.app.services.recovery.runOnce(0);
    const after = await stored(p.id);
    assert.equal(after.captures.length, 1);
    assert.equal(after.captures[0].status, 'SUCCESS');
    assert.equal(after.captures[0].partner_transactions[0].status, 'SUCCESS');
    assert.equal(after.amounts.total_captured, 4000);
    assert.equal(after.amounts.available_to_capture, 0);
    // The replay of that key now names the settled capture.
    expectViolation(await op(p.id, 'captures', { amount: 4000 }, 'lost-answer'), `/v2/payments/${p.id}/captures`, String(opId));
  });
});

describe('a replay while the first call is in flight is held', () => {
  let t: TestApp;
  let m: Merchant;
  const { pay, op, stored } = helpers(() => ({ t, m }));

  before(async () => {
    t = await createTestApp({ simLatencyMs: 600 });
    m = await t.createMerchant('hold');
  });
  after(() => t.close());

  it('answers the replay 409 naming the first operation, after the first completes', async () => {
    const p = await pay(3000);
    const start = Date.now();
    let firstDone = 0;
    let replayDone = 0;
    let statusWhenReplayAnswered = '';
    const first = op(p.id, 'captures', { amount: 3000 }, 'held-key').then((r) => {
      firstDone = Date.now();
      return r;
    });
    await sleep(100);
    const replay = op(p.id, 'captures', { amount: 3000 }, 'held-key').then(async (r) => {
      replayDone = Date.now();
      const { rows } = await t.testDb.db.query<{ status: string }>(`SELECT status FROM payment_operations WHERE payment_id = $1`, [p.id]);
      statusWhenReplayAnswered = rows.map((x) => x.status).join(',');
      return r;
    });
    const [a, b] = await Promise.all([first, replay]);
    assert.equal(a.statusCode, 200, a.body);
    const opId = String(a.headers['x-created-operation-id']);
    expectViolation(b, `/v2/payments/${p.id}/captures`, opId);
    assert.equal(a.json().captures[0].status, 'SUCCESS');
    // The replay was held until the first had settled.
    assert.equal(statusWhenReplayAnswered, 'SUCCESS');
    assert.ok(replayDone - start >= 550, `replay answered after ${replayDone - start} ms`);
    assert.ok(replayDone >= firstDone - 250, `replay at ${replayDone - start} ms, first at ${firstDone - start} ms`);
    assert.equal((await stored(p.id)).amounts.total_captured, 3000);
  });
});

describe('a replay is held a bounded number of attempts only', () => {
  let t: TestApp;
  let m: Merchant;
  const { pay, op, stored } = helpers(() => ({ t, m }));

  before(async () => {
    t = await createTestApp({ simLatencyMs: 1500, idempotencyHoldAttempts: 2, idempotencyHoldIntervalMs: 50 });
    m = await t.createMerchant('bounded');
  });
  after(() => t.close());

  it('answers the replay 409 before the first call completes', async () => {
    const p = await pay(3000);
    const start = Date.now();
    let firstDone = 0;
    let replayDone = 0;
    const first = op(p.id, 'captures', { amount: 3000 }, 'bounded-key').then((r) => {
      firstDone = Date.now();
      return r;
    });
    await sleep(100);
    const replay = op(p.id, 'captures', { amount: 3000 }, 'bounded-key').then((r) => {
      replayDone = Date.now();
      return r;
    });
    const [a, b] = await Promise.all([first, replay]);
    assert.equal(a.statusCode, 200, a.body);
    const opId = String(a.headers['x-created-operation-id']);
    expectViolation(b, `/v2/payments/${p.id}/captures`, opId);
    assert.ok(replayDone < firstDone, `replay at ${replayDone - start} ms, first at ${firstDone - start} ms`);
    assert.ok(replayDone - start < 1200, `replay answered after ${replayDone - start} ms`);
    const after = await stored(p.id);
    assert.equal(after.captures.length, 1);
    assert.equal(after.amounts.total_captured, 3000);
  });
});
