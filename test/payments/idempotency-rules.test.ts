// The spec's idempotency rules (Errors 3, 4 and 5), to the letter: the 409 body,
// scopes (entity for creation, payment for captures/refunds/voids, across the three
// kinds), reading back the first outcome, replays held while the first call is in
// flight (and the bounded hold), and requests without a key.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2030', cvv: '123' });
const paymentBody = (amount: number, number?: string) => ({
  amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) }],
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Kind = 'captures' | 'refunds' | 'voids';

function client(t: TestApp, m: Merchant) {
  const keyed = (key?: string) => ({ ...m.auth, ...(key ? { 'x-idempotency-key': key } : {}) });
  return {
    pay: (body: object, key?: string) => t.app.inject({ method: 'POST', url: '/v2/payments', headers: keyed(key), payload: body }),
    op: (id: string, kind: Kind, payload: object | undefined, key?: string) =>
      t.app.inject({ method: 'POST', url: `/v2/payments/${id}/${kind}`, headers: keyed(key), ...(payload ? { payload } : {}) }),
    get: (id: string, stored = false) =>
      t.app.inject({ method: 'GET', url: `/v2/payments/${id}`, headers: { ...m.auth, ...(stored ? { 'cache-control': 'max-age=60' } : {}) } }),
  };
}

async function authorized(c: ReturnType<typeof client>, amount: number, number?: string): Promise<Record<string, any>> {
  const res = await c.pay(paymentBody(amount, number));
  assert.equal(res.statusCode, 200, res.body);
  const p = res.json();
  assert.equal(p.authorization.status, 'AUTHORIZED', res.body);
  return p;
}

/** Asserts the spec's idempotency-violation problem exactly (extra members allowed) and returns it. */
function expectViolation(res: LightMyRequestResponse, instance: string, resourceId: string): Record<string, unknown> {
  const body = expectProblem(res, 409);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  assert.deepEqual(
    { type: body.type, title: body.title, status: body.status, instance: body.instance, resource_id: body.resource_id },
    { type: 'urn:eu.service:write-conflict', title: 'Idempotency violation', status: 409, instance, resource_id: resourceId },
  );
  assert.equal(res.headers['x-created-operation-id'], undefined, 'a refused replay creates nothing');
  return body;
}

async function count(t: TestApp, sql: string, params: unknown[]): Promise<number> {
  const { rows } = await t.testDb.db.query<{ n: number }>(sql, params);
  return Number(rows[0]!.n);
}

describe('idempotency of POST /v2/payments (keys scoped to the entity)', () => {
  let t: TestApp;
  let m: Merchant;
  let c: ReturnType<typeof client>;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Idempotency A');
    c = client(t, m);
  });
  after(() => t.close());

  it('answers a replay 409 with exactly the spec body naming the payment', async () => {
    const first = await c.pay(paymentBody(1000), 'order-1');
    assert.equal(first.statusCode, 200, first.body);
    const id = first.json().id as string;
    const replay = await c.pay(paymentBody(1000), 'order-1');
    expectViolation(replay, '/v2/payments', id);
    // A late replay, after other traffic, is still the same answer.
    await c.pay(paymentBody(500), 'order-2');
    expectViolation(await c.pay(paymentBody(1000), 'order-1'), '/v2/payments', id);
    assert.equal(await count(t, 'SELECT count(*)::int AS n FROM payments WHERE entity_id = $1 AND idempotency_key = $2', [m.entityId, 'order-1']), 1);
  });

  it('answers 409 for a different request reusing the key, and creates nothing', async () => {
    const first = await c.pay(paymentBody(2000), 'order-3');
    assert.equal(first.statusCode, 200, first.body);
    const before = await count(t, 'SELECT count(*)::int AS n FROM payments WHERE entity_id = $1', [m.entityId]);
    const txsBefore = await count(t, 'SELECT count(*)::int AS n FROM sim_partner_operations', []);
    expectViolation(await c.pay(paymentBody(9999), 'order-3'), '/v2/payments', first.json().id);
    // The same entity through its API key instead of a bearer token: same scope.
    const viaApiKey = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: { 'x-api-key': m.apiKey, 'x-idempotency-key': 'order-3' }, payload: paymentBody(7), });
    expectViolation(viaApiKey, '/v2/payments', first.json().id);
    assert.equal(await count(t, 'SELECT count(*)::int AS n FROM payments WHERE entity_id = $1', [m.entityId]), before);
    assert.equal(await count(t, 'SELECT count(*)::int AS n FROM sim_partner_operations', []), txsBefore, 'no partner was called');
  });

  it('keeps the keys of another entity independent', async () => {
    const mine = await c.pay(paymentBody(1000), 'shared-key');
    assert.equal(mine.statusCode, 200, mine.body);
    const other = await t.createMerchant('Idempotency B');
    const oc = client(t, other);
    const theirs = await oc.pay(paymentBody(1000), 'shared-key');
    assert.equal(theirs.statusCode, 200, theirs.body);
    assert.notEqual(theirs.json().id, mine.json().id);
    assert.equal(theirs.json().entity_id, other.entityId);
    // Each entity's replay names its own payment.
    expectViolation(await oc.pay(paymentBody(1000), 'shared-key'), '/v2/payments', theirs.json().id);
    expectViolation(await c.pay(paymentBody(1000), 'shared-key'), '/v2/payments', mine.json().id);
  });

  it('names a refused first payment; reading it back gives the first outcome', async () => {
    const first = await c.pay(paymentBody(1500, '4000000000000002'), 'declined-1');
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().authorization.status, 'REFUSED');
    // Retrying a refusal with the same key does not authorize it this time.
    const replay = await c.pay(paymentBody(1500), 'declined-1');
    const body = expectViolation(replay, '/v2/payments', first.json().id);
    const read = await c.get(String(body.resource_id));
    assert.equal(read.statusCode, 200);
    assert.equal(read.json().authorization.status, 'REFUSED');
    assert.equal(read.json().amounts.total_authorized, 0);
  });
});

describe('idempotency of captures, refunds and voids (keys scoped to the payment)', () => {
  let t: TestApp;
  let m: Merchant;
  let c: ReturnType<typeof client>;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Operations');
    c = client(t, m);
  });
  after(() => t.close());

  it('answers a genuine capture retry 409 naming the first capture', async () => {
    const p = await authorized(c, 10_000);
    const first = await c.op(p.id, 'captures', { amount: 3000 }, 'cap-1');
    assert.equal(first.statusCode, 200, first.body);
    const opId = first.headers['x-created-operation-id'] as string;
    assert.match(opId, /^[0-9a-f-]{36}$/);
    const instance = `/v2/payments/${p.id}/captures`;
    expectViolation(await c.op(p.id, 'captures', { amount: 3000 }, 'cap-1'), instance, opId);
    // Same key, different amount: still the first operation.
    expectViolation(await c.op(p.id, 'captures', { amount: 10 }, 'cap-1'), instance, opId);
    const read = (await c.get(p.id)).json();
    assert.equal(read.amounts.total_captured, 3000);
    assert.equal(read.captures.length, 1);
    assert.equal(read.captures[0].id, opId);
    assert.equal(read.captures[0].status, 'SUCCESS');
  });

  it('answers 409 naming the first operation when the key is reused for another kind', async () => {
    const p = await authorized(c, 10_000);
    const cap = await c.op(p.id, 'captures', { amount: 4000 }, 'k1');
    assert.equal(cap.statusCode, 200, cap.body);
    const capId = cap.headers['x-created-operation-id'] as string;
    expectViolation(await c.op(p.id, 'refunds', { amount: 100 }, 'k1'), `/v2/payments/${p.id}/refunds`, capId);
    expectViolation(await c.op(p.id, 'voids', {}, 'k1'), `/v2/payments/${p.id}/voids`, capId);
    expectViolation(await c.op(p.id, 'voids', undefined, 'k1'), `/v2/payments/${p.id}/voids`, capId);

    // And the other way round: a refund's key reused by a void and a capture.
    const ref = await c.op(p.id, 'refunds', { amount: 1000 }, 'r1');
    assert.equal(ref.statusCode, 200, ref.body);
    const refId = ref.headers['x-created-operation-id'] as string;
    expectViolation(await c.op(p.id, 'voids', { amount: 500 }, 'r1'), `/v2/payments/${p.id}/voids`, refId);
    expectViolation(await c.op(p.id, 'captures', { amount: 500 }, 'r1'), `/v2/payments/${p.id}/captures`, refId);

    // Reading the payment back shows the first outcomes only.
    const read = (await c.get(p.id)).json();
    assert.equal(read.amounts.total_captured, 4000);
    assert.equal(read.amounts.total_refunded, 1000);
    assert.equal(read.amounts.total_voided, 0);
    assert.deepEqual(read.captures.map((o: any) => [o.id, o.status, o.amount]), [[capId, 'SUCCESS', 4000]]);
    assert.deepEqual(read.refunds.map((o: any) => [o.id, o.status, o.amount]), [[refId, 'SUCCESS', 1000]]);
    assert.equal(read.voids.length, 0);
    assert.equal(await count(t, 'SELECT count(*)::int AS n FROM payment_operations WHERE payment_id = $1', [p.id]), 2);
  });

  it('lets the same key run once on each payment', async () => {
    const a = await authorized(c, 5000);
    const b = await authorized(c, 5000);
    const onA = await c.op(a.id, 'captures', { amount: 1000 }, 'seq-1');
    const onB = await c.op(b.id, 'captures', { amount: 2000 }, 'seq-1');
    assert.equal(onA.statusCode, 200, onA.body);
    assert.equal(onB.statusCode, 200, onB.body);
    assert.notEqual(onA.headers['x-created-operation-id'], onB.headers['x-created-operation-id']);
    // A void on a third payment with the key, too.
    const d = await authorized(c, 5000);
    const onD = await c.op(d.id, 'voids', undefined, 'seq-1');
    assert.equal(onD.statusCode, 200, onD.body);
    assert.equal(onD.json().amounts.total_voided, 5000);
    assert.equal((await c.get(a.id)).json().amounts.total_captured, 1000);
    assert.equal((await c.get(b.id)).json().amounts.total_captured, 2000);
    // And each replay names the operation of its own payment.
    expectViolation(await c.op(a.id, 'captures', { amount: 1000 }, 'seq-1'), `/v2/payments/${a.id}/captures`, onA.headers['x-created-operation-id'] as string);
    expectViolation(await c.op(b.id, 'refunds', { amount: 1000 }, 'seq-1'), `/v2/payments/${b.id}/refunds`, onB.headers['x-created-operation-id'] as string);
  });

  it('names a failed first operation; reading it back gives FAILURE, not a new attempt', async () => {
    // This test card authorizes but the acquirer declines every capture.
    const p = await authorized(c, 3000, '4000000000000341');
    const first = await c.op(p.id, 'captures', { amount: 3000 }, 'cap-declined');
    assert.equal(first.statusCode, 200, first.body);
    const opId = first.headers['x-created-operation-id'] as string;
    assert.equal(first.json().captures[0].status, 'FAILURE');
    const body = expectViolation(await c.op(p.id, 'captures', { amount: 3000 }, 'cap-declined'), `/v2/payments/${p.id}/captures`, opId);
    const read = (await c.get(p.id)).json();
    const op = read.captures.find((o: any) => o.id === body.resource_id);
    assert.equal(op.status, 'FAILURE');
    assert.equal(read.captures.length, 1);
    assert.equal(read.amounts.total_captured, 0);
  });

  it('does not reveal another entity\'s operation through a key: 404, no 409', async () => {
    const p = await authorized(c, 2000);
    const cap = await c.op(p.id, 'captures', { amount: 1000 }, 'private-key');
    assert.equal(cap.statusCode, 200);
    const other = client(t, await t.createMerchant('Intruder'));
    const res = await other.op(p.id, 'captures', { amount: 1000 }, 'private-key');
    assert.equal(res.statusCode, 404, res.body);
    assert.doesNotMatch(res.body, new RegExp(cap.headers['x-created-operation-id'] as string));
  });

  it('refuses a malformed key with 400 and records nothing', async () => {
    const p = await authorized(c, 2000);
    for (const key of ['has space', 'x'.repeat(256), 'é']) {
      const res = await t.app.inject({
        method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: { ...m.auth, 'x-idempotency-key': key }, payload: { amount: 100 },
      });
      expectProblem(res, 400);
    }
    assert.equal(await count(t, 'SELECT count(*)::int AS n FROM payment_operations WHERE payment_id = $1', [p.id]), 0);
  });
});

describe('requests without a key', () => {
  let t: TestApp;
  let c: ReturnType<typeof client>;
  before(async () => {
    t = await createTestApp();
    c = client(t, await t.createMerchant('No keys'));
  });
  after(() => t.close());

  it('a retried capture runs again, then is refused 400 once the amount is no longer available', async () => {
    const p = await authorized(c, 2500);
    const one = await c.op(p.id, 'captures', { amount: 1000 });
    const two = await c.op(p.id, 'captures', { amount: 1000 });
    assert.equal(one.statusCode, 200, one.body);
    assert.equal(two.statusCode, 200, two.body);
    assert.notEqual(one.headers['x-created-operation-id'], two.headers['x-created-operation-id'], 'the retry ran again');
    assert.equal(two.json().amounts.total_captured, 2000);
    const three = await c.op(p.id, 'captures', { amount: 1000 });
    const problem = expectProblem(three, 400);
    assert.equal(problem.instance, `/v2/payments/${p.id}/captures`);
    assert.equal(problem.available_amount, 500);
    assert.equal(three.headers['x-created-operation-id'], undefined);
    const read = (await c.get(p.id)).json();
    assert.equal(read.amounts.total_captured, 2000);
    assert.equal(read.captures.length, 2);
  });

  it('a retried refund runs again, then is refused 400', async () => {
    const p = await authorized(c, 2000);
    assert.equal((await c.op(p.id, 'captures', { amount: 2000 })).statusCode, 200);
    assert.equal((await c.op(p.id, 'refunds', { amount: 1500 })).statusCode, 200);
    expectProblem(await c.op(p.id, 'refunds', { amount: 1500 }), 400);
    const read = (await c.get(p.id)).json();
    assert.equal(read.amounts.total_refunded, 1500);
    assert.equal(read.refunds.length, 1);
  });

  it('a retried payment creation creates a second payment', async () => {
    const a = await c.pay(paymentBody(1200));
    const b = await c.pay(paymentBody(1200));
    assert.equal(a.statusCode, 200);
    assert.equal(b.statusCode, 200);
    assert.notEqual(a.json().id, b.json().id);
  });
});

describe('a replay arriving while the first call is in flight', () => {
  /** Waits (polling, bounded) until the query finds a row. */
  const untilRow = async (t: TestApp, sql: string, params: unknown[]) => {
    for (const deadline = Date.now() + 15_000; (await t.testDb.db.query(sql, params)).rows.length === 0;) {
      assert.ok(Date.now() < deadline, `no row for ${sql}`);
      await sleep(5);
    }
  };
  it('is held until the first capture completes, then answered 409 naming it', async () => {
    const t = await createTestApp({ simLatencyMs: 700 });
    try {
      const m = await t.createMerchant();
      const c = client(t, m);
      const p = await authorized(c, 5000);
      const start = Date.now();
      let firstDoneAt = 0;
      const first = c.op(p.id, 'captures', { amount: 1000 }, 'slow-capture').then((r) => {
        firstDoneAt = Date.now();
        return r;
      });
      // The replay is sent once the first call holds its key (its operation is written,
      // before the slow partner call), whatever the machine's speed.
      await untilRow(t, 'SELECT 1 FROM payment_operations WHERE payment_id = $1 AND idempotency_key = $2', [p.id, 'slow-capture']);
      const replay = c.op(p.id, 'captures', { amount: 1000 }, 'slow-capture').then((r) => ({ r, at: Date.now() }));
      const [firstRes, { r: replayRes, at: replayDoneAt }] = await Promise.all([first, replay]);
      assert.equal(firstRes.statusCode, 200, firstRes.body);
      assert.equal(firstRes.json().captures[0].status, 'SUCCESS');
      assert.ok(firstDoneAt - start >= 650, `the partner call was slow (${firstDoneAt - start} ms)`);
      assert.ok(replayDoneAt >= firstDoneAt, `the replay (${replayDoneAt - start} ms) was answered after the first (${firstDoneAt - start} ms)`);
      // Bounded: 20 attempts 100 ms apart by default, so about 2 s at most after it arrived.
      assert.ok(replayDoneAt - start < 3000, `the hold is bounded (${replayDoneAt - start} ms)`);
      const opId = firstRes.headers['x-created-operation-id'] as string;
      expectViolation(replayRes, `/v2/payments/${p.id}/captures`, opId);
      const read = (await c.get(p.id)).json();
      assert.equal(read.captures.length, 1);
      assert.equal(read.captures[0].status, 'SUCCESS');
      assert.equal(read.amounts.total_captured, 1000);
    } finally {
      await t.close();
    }
  });

  it('is held until the first payment creation completes, then answered 409 naming the payment', async () => {
    const t = await createTestApp({ simLatencyMs: 700 });
    try {
      const m = await t.createMerchant();
      const c = client(t, m);
      let firstDoneAt = 0;
      const first = c.pay(paymentBody(4000), 'slow-order').then((r) => {
        firstDoneAt = Date.now();
        return r;
      });
      await untilRow(t, 'SELECT 1 FROM payments WHERE entity_id = $1 AND idempotency_key = $2', [m.entityId, 'slow-order']);
      const replay = c.pay(paymentBody(4000), 'slow-order').then((r) => ({ r, at: Date.now() }));
      const [firstRes, { r: replayRes, at: replayDoneAt }] = await Promise.all([first, replay]);
      assert.equal(firstRes.statusCode, 200, firstRes.body);
      assert.equal(firstRes.json().authorization.status, 'AUTHORIZED');
      assert.ok(replayDoneAt >= firstDoneAt, 'the replay was answered after the first call');
      expectViolation(replayRes, '/v2/payments', firstRes.json().id);
      assert.equal(await count(t, 'SELECT count(*)::int AS n FROM payments WHERE entity_id = $1', [m.entityId]), 1);
    } finally {
      await t.close();
    }
  });

  it('ends in a 409 after a bounded hold while the first is still running; GET then settles', async () => {
    // The partner takes 6 s, the hold at most 2 × 50 ms: the replay is answered first
    // whatever the load (ordering, not a millisecond bound).
    const t = await createTestApp({ simLatencyMs: 6000, idempotencyHoldAttempts: 2, idempotencyHoldIntervalMs: 50 });
    try {
      const m = await t.createMerchant();
      const c = client(t, m);
      const p = await authorized(c, 5000);
      let firstDone = false;
      const first = c.op(p.id, 'captures', { amount: 2000 }, 'never-waits').then((r) => {
        firstDone = true;
        return r;
      });
      await sleep(100);
      const replay = await c.op(p.id, 'captures', { amount: 2000 }, 'never-waits');
      assert.equal(firstDone, false, 'the hold was bounded: the replay was answered while the first call was still in flight');
      const stored = (await c.get(p.id, true)).json();
      assert.equal(stored.captures.length, 1);
      const opId = stored.captures[0].id as string;
      assert.equal(stored.captures[0].status, 'PENDING', 'the first call is still in flight');
      expectViolation(replay, `/v2/payments/${p.id}/captures`, opId);
      // While in flight the capture reserves its amount: nobody else can take it.
      assert.equal(expectProblem(await c.op(p.id, 'captures', { amount: 3001 }), 400).available_amount, 3000);

      const firstRes = await first;
      assert.equal(firstRes.statusCode, 200, firstRes.body);
      assert.equal(firstRes.headers['x-created-operation-id'], opId);
      const settled = await c.get(p.id);
      assert.equal(settled.statusCode, 200);
      const s = settled.json();
      assert.equal(s.captures.length, 1);
      assert.equal(s.captures[0].id, opId);
      assert.equal(s.captures[0].status, 'SUCCESS');
      assert.equal(s.amounts.total_captured, 2000);
      assert.equal(s.amounts.available_to_capture, 3000);
    } finally {
      await t.close();
    }
  });

  it('a first call that never completes: the replay ends in 409 and GET /v2/payments/{id} settles the state', async () => {
    // Captures with this card time out at the acquirer (which did process them): the
    // first call answers with the capture still PENDING and never completes it.
    const t = await createTestApp({ idempotencyHoldAttempts: 2, idempotencyHoldIntervalMs: 50 });
    try {
      const c = client(t, await t.createMerchant());
      const p = await authorized(c, 6000, '4000000000000416');
      const first = await c.op(p.id, 'captures', { amount: 6000 }, 'timeout-cap');
      assert.equal(first.statusCode, 200, first.body);
      const opId = first.headers['x-created-operation-id'] as string;
      assert.equal(first.json().captures[0].status, 'PENDING');
      expectViolation(await c.op(p.id, 'captures', { amount: 6000 }, 'timeout-cap'), `/v2/payments/${p.id}/captures`, opId);
      let s: Record<string, any> = {};
      const deadline = Date.now() + 5000;
      do {
        await sleep(300);
        s = (await c.get(p.id)).json();
      } while (s.captures[0].status === 'PENDING' && Date.now() < deadline);
      assert.equal(s.captures[0].id, opId);
      assert.equal(s.captures[0].status, 'SUCCESS');
      assert.equal(s.captures.length, 1);
      assert.equal(s.amounts.total_captured, 6000);
      // Still the same answer for a late replay.
      expectViolation(await c.op(p.id, 'captures', { amount: 6000 }, 'timeout-cap'), `/v2/payments/${p.id}/captures`, opId);
    } finally {
      await t.close();
    }
  });
});
