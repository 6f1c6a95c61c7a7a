// Idempotency exactly as the spec's Errors section says, concurrency of operations on
// one payment (the amounts invariants over random operations: amounts.test.ts).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem } from '../helpers/app.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030' };
const body = (amount: number) => ({ amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });

async function setup(overrides = {}) {
  const t = await createTestApp(overrides);
  const m = await t.createMerchant();
  const pay = async (amount: number, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...m.auth, ...headers }, payload: body(amount) });
  const op = (id: string, kind: string, payload: object, key?: string) =>
    t.app.inject({ method: 'POST', url: `/v2/payments/${id}/${kind}`, headers: { ...m.auth, ...(key ? { 'x-idempotency-key': key } : {}) }, payload });
  return { t, m, pay, op };
}

describe('idempotency keys', () => {
  let s: Awaited<ReturnType<typeof setup>>;
  before(async () => {
    s = await setup();
  });
  after(() => s.t.close());

  it('answers a replayed payment creation with the spec\'s 409', async () => {
    const first = await s.pay(1000, { 'x-idempotency-key': 'order-1' });
    assert.equal(first.statusCode, 200);
    const replay = await s.pay(1000, { 'x-idempotency-key': 'order-1' });
    const p = expectProblem(replay, 409);
    assert.equal(p.type, 'urn:eu.service:write-conflict');
    assert.equal(p.title, 'Idempotency violation');
    assert.equal(p.instance, '/v2/payments');
    assert.equal(p.resource_id, first.json().id);
    const other = await s.t.createMerchant('other');
    const theirs = await s.t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...other.auth, 'x-idempotency-key': 'order-1' }, payload: body(1000) });
    assert.equal(theirs.statusCode, 200, 'keys of payment creation are scoped to the entity');
  });

  it('scopes operation keys to the payment, across capture, refund and void', async () => {
    const a = (await s.pay(10000)).json();
    const b = (await s.pay(10000)).json();
    const cap = await s.op(a.id, 'captures', { amount: 3000 }, 'k1');
    assert.equal(cap.statusCode, 200);
    const opId = cap.headers['x-created-operation-id'];
    const reused = expectProblem(await s.op(a.id, 'refunds', { amount: 100 }, 'k1'), 409);
    assert.equal(reused.resource_id, opId);
    assert.equal(reused.instance, `/v2/payments/${a.id}/refunds`);
    expectProblem(await s.op(a.id, 'voids', {}, 'k1'), 409);
    assert.equal((await s.op(b.id, 'captures', { amount: 3000 }, 'k1')).statusCode, 200, 'the same key on another payment is another operation');
    const after = (await s.t.app.inject({ url: `/v2/payments/${a.id}`, headers: s.m.auth })).json();
    assert.equal(after.amounts.total_captured, 3000);
    assert.equal(after.refunds.length + after.voids.length, 0);
  });

  it('without a key, a retry runs again until the amount is no longer available', async () => {
    const p = (await s.pay(2000)).json();
    assert.equal((await s.op(p.id, 'captures', { amount: 1000 })).statusCode, 200);
    assert.equal((await s.op(p.id, 'captures', { amount: 1000 })).statusCode, 200);
    expectProblem(await s.op(p.id, 'captures', { amount: 1000 }), 400);
  });

  it('holds 20 parallel captures to what was authorized, and parallel replays to one operation', async () => {
    const p = (await s.pay(10000)).json();
    const results = await Promise.all(Array.from({ length: 20 }, () => s.op(p.id, 'captures', { amount: 1000 })));
    assert.equal(results.filter((r) => r.statusCode === 200).length, 10);
    assert.equal(results.filter((r) => r.statusCode === 400).length, 10);
    const final = (await s.t.app.inject({ url: `/v2/payments/${p.id}`, headers: s.m.auth })).json();
    assert.equal(final.amounts.total_captured, 10000);
    assert.equal(final.captures.length, 10);

    const q = (await s.pay(10000)).json();
    const replays = await Promise.all(Array.from({ length: 10 }, () => s.op(q.id, 'captures', { amount: 500 }, 'same')));
    const ok = replays.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1);
    const ids = new Set(replays.filter((r) => r.statusCode === 409).map((r) => r.json().resource_id));
    assert.deepEqual([...ids], [ok[0]!.headers['x-created-operation-id']]);
  });
});

describe('replays while the first call is in flight', () => {
  it('holds the replay until the first call completes, then answers 409 naming it', async () => {
    const s = await setup({ simLatencyMs: 600 });
    try {
      const p = (await s.pay(5000)).json();
      const first = s.op(p.id, 'captures', { amount: 1000 }, 'slow');
      await new Promise((r) => setTimeout(r, 150));
      let firstDone = false;
      void first.then(() => (firstDone = true));
      const replay = await s.op(p.id, 'captures', { amount: 1000 }, 'slow');
      assert.ok(firstDone, 'the replay was answered only after the first call');
      assert.equal(expectProblem(replay, 409).resource_id, (await first).headers['x-created-operation-id']);
    } finally {
      await s.t.close();
    }
  });

  it('answers 409 after a bounded hold even if the first call is still running; GET then settles', async () => {
    const s = await setup({ simLatencyMs: 1500, idempotencyHoldAttempts: 2, idempotencyHoldIntervalMs: 50 });
    try {
      const p = (await s.pay(5000)).json();
      const first = s.op(p.id, 'captures', { amount: 1000 }, 'slower');
      await new Promise((r) => setTimeout(r, 150));
      let firstDone = false;
      void first.then(() => (firstDone = true));
      const replay = await s.op(p.id, 'captures', { amount: 1000 }, 'slower');
      assert.ok(!firstDone, 'the replay did not wait for the first call');
      const opId = expectProblem(replay, 409).resource_id;
      const pending = (await s.t.app.inject({ url: `/v2/payments/${p.id}`, headers: { ...s.m.auth, 'cache-control': 'max-age=10' } })).json();
      assert.equal(pending.captures[0].id, opId);
      assert.equal(pending.captures[0].status, 'PENDING');
      await first;
      const settled = (await s.t.app.inject({ url: `/v2/payments/${p.id}`, headers: s.m.auth })).json();
      assert.equal(settled.captures[0].status, 'SUCCESS');
      assert.equal(settled.amounts.total_captured, 1000);
    } finally {
      await s.t.close();
    }
  });
});
