// Idempotency under concurrency (spec, Errors 5, and Limits: the replay hold): parallel
// requests on one payment with one key or none, a replay held while the first call is in
// flight, the hold bounded when the first call takes longer, and a first call that never
// completes (the acquirer's answer lost), settled by GET /v2/payments/{id} or by the
// recovery step. The rules one request at a time: idempotency.test.ts.
// No wall clock: a gate on the card simulator keeps the first call in flight for as long
// as a test wants, and a TestClock reveals a timed-out call's outcome.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { PartnerResult } from '../../src/partners/port.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const paymentBody = (amount: number, number?: string) => ({
  amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) }],
});

function client(t: TestApp, m: Merchant) {
  const keyed = (key?: string) => ({ ...m.auth, ...(key ? { 'x-idempotency-key': key } : {}) });
  return {
    pay: (body: object, key?: string) => t.app.inject({ method: 'POST', url: '/v2/payments', headers: keyed(key), payload: body }),
    op: (id: string, kind: string, payload: object, key?: string) =>
      t.app.inject({ method: 'POST', url: `/v2/payments/${id}/${kind}`, headers: keyed(key), payload }),
    /** GET /v2/payments/{id}; stored: with max-age, the stored view without asking the partners. */
    get: async (id: string, stored = false) =>
      (await t.app.inject({ url: `/v2/payments/${id}`, headers: { ...m.auth, ...(stored ? { 'cache-control': 'max-age=60' } : {}) } })).json(),
  };
}

async function authorized(c: ReturnType<typeof client>, amount: number, number?: string): Promise<Record<string, any>> {
  const res = await c.pay(paymentBody(amount, number));
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().authorization.status, 'AUTHORIZED', res.body);
  return res.json();
}

/** Asserts the spec's idempotency violation body and returns it. */
function expectViolation(res: LightMyRequestResponse, instance: string, resourceId: string): Record<string, unknown> {
  const p = expectProblem(res, 409);
  assert.deepEqual(
    { type: p.type, title: p.title, status: p.status, instance: p.instance, resource_id: p.resource_id },
    { type: 'urn:eu.service:write-conflict', title: 'Idempotency violation', status: 409, instance, resource_id: resourceId },
  );
  return p;
}

const statuses = (all: LightMyRequestResponse[]) => all.map((r) => `${r.statusCode} ${r.body}`).join('\n');

/**
 * Holds the card simulator's next call of this kind at a gate (the app's partners must not
 * answer inline, simInline: false): `entered` resolves once payd has recorded the call and
 * is waiting for the partner's answer; the call goes on at open(). Later calls pass
 * straight through. close() opens it and puts the simulator back (in finally).
 */
function gate(t: TestApp, kind: 'authorize' | 'capture') {
  const sim = t.app.services.partners.get('card-sim')!;
  const own = Object.getOwnPropertyDescriptor(sim, kind);
  const call = sim[kind] as (req: never) => Promise<PartnerResult>;
  const restore = () => (own ? Object.defineProperty(sim, kind, own) : Reflect.deleteProperty(sim, kind));
  let reached!: () => void;
  let open!: () => void;
  const entered = new Promise<void>((r) => (reached = r));
  const opened = new Promise<void>((r) => (open = r));
  Object.defineProperty(sim, kind, {
    configurable: true,
    writable: true,
    value: async (req: never) => {
      restore();
      reached();
      await opened;
      return call.call(sim, req);
    },
  });
  return {
    entered,
    open,
    close: () => {
      open();
      restore();
    },
  };
}

/**
 * Resolves once the app has read the database `times` times with `key` among the
 * parameters (a replay looking for the first call's record; the first call, held at the
 * gate, reads nothing meanwhile); rejects if `replay` is answered before that.
 */
async function heldReads(db: Db, key: string, times: number, replay: Promise<unknown>): Promise<void> {
  const query = db.query;
  let reached!: () => void;
  let n = 0;
  const seen = new Promise<void>((r) => (reached = r));
  db.query = ((sql: string, params?: readonly unknown[]) => {
    if (params?.includes(key) && ++n >= times) reached();
    return query.call(db, sql, params);
  }) as Db['query'];
  try {
    await Promise.race([seen, replay.then(() => assert.fail(`the replay was answered after ${n} reads of its key, while the first call was in flight`))]);
  } finally {
    db.query = query;
  }
}

describe('parallel requests on one payment', () => {
  let t: TestApp;
  let c: ReturnType<typeof client>;
  before(async () => {
    t = await createTestApp();
    c = client(t, await t.createMerchant('Parallel'));
  });
  after(() => t.close());

  it('runs one of 10 parallel requests with one key and answers the nine others 409 with the same resource_id', async () => {
    const p = await authorized(c, 8000);
    const all = await Promise.all(Array.from({ length: 10 }, () => c.op(p.id, 'captures', { amount: 500 }, 'parallel-key')));
    const ok = all.filter((r) => r.statusCode === 200);
    const conflicts = all.filter((r) => r.statusCode === 409);
    assert.equal(ok.length, 1, statuses(all));
    assert.equal(conflicts.length, 9, statuses(all));
    const opId = String(ok[0]!.headers['x-created-operation-id']);
    for (const r of conflicts) expectViolation(r, `/v2/payments/${p.id}/captures`, opId);
    const after = await c.get(p.id, true);
    assert.equal(after.captures.length, 1);
    assert.equal(after.amounts.total_captured, 500);
  });

  it('never captures more than authorized under 20 parallel captures without a key', async () => {
    const p = await authorized(c, 10_000);
    const all = await Promise.all(Array.from({ length: 20 }, () => c.op(p.id, 'captures', { amount: 1000 })));
    const ok = all.filter((r) => r.statusCode === 200);
    const refused = all.filter((r) => r.statusCode !== 200);
    assert.equal(ok.length, 10, statuses(all));
    for (const r of refused) expectProblem(r, 400);
    const after = await c.get(p.id, true);
    assert.equal(after.amounts.total_captured, 10_000);
    assert.equal(after.amounts.available_to_capture, 0);
    assert.equal(after.captures.length, 10);
    assert.ok(after.captures.every((o: any) => o.status === 'SUCCESS'));
    assert.equal(after.overview.captured, 'FULLY');
  });
});

describe('a replay arriving while the first call is in flight is held until it completes', () => {
  // The hold is long enough (200 × 25 ms) never to end while the first call goes on after the gate.
  let t: TestApp;
  let m: Merchant;
  let c: ReturnType<typeof client>;
  before(async () => {
    t = await createTestApp({ simInline: false, idempotencyHoldAttempts: 200, idempotencyHoldIntervalMs: 25 });
    m = await t.createMerchant('Held');
    c = client(t, m);
  });
  after(() => t.close());

  it('a capture: the replay is answered 409 naming the first capture once that one has succeeded', async () => {
    const p = await authorized(c, 5000);
    const g = gate(t, 'capture');
    try {
      const first = c.op(p.id, 'captures', { amount: 1000 }, 'slow-capture');
      await g.entered; // the first capture is recorded, PENDING, and waits for the acquirer
      let statusWhenAnswered = '';
      const replay = c.op(p.id, 'captures', { amount: 1000 }, 'slow-capture').then(async (r) => {
        const { rows } = await t.testDb.db.query<{ status: string }>('SELECT status FROM payment_operations WHERE payment_id = $1', [p.id]);
        statusWhenAnswered = rows.map((x) => x.status).join(',');
        return r;
      });
      // The replay found the capture in flight and looked again after waiting: it is held.
      await heldReads(t.testDb.db, 'slow-capture', 3, replay);
      g.open();
      const [firstRes, replayRes] = await Promise.all([first, replay]);
      assert.equal(firstRes.statusCode, 200, firstRes.body);
      assert.equal(firstRes.json().captures[0].status, 'SUCCESS');
      assert.equal(statusWhenAnswered, 'SUCCESS', 'the replay was answered once the first capture had settled');
      expectViolation(replayRes, `/v2/payments/${p.id}/captures`, firstRes.headers['x-created-operation-id'] as string);
      const read = await c.get(p.id);
      assert.equal(read.captures.length, 1);
      assert.equal(read.captures[0].status, 'SUCCESS');
      assert.equal(read.amounts.total_captured, 1000);
    } finally {
      g.close();
    }
  });

  it('a payment creation: the replay is answered 409 naming the payment once it is authorized', async () => {
    const g = gate(t, 'authorize');
    try {
      const first = c.pay(paymentBody(4000), 'slow-order');
      await g.entered; // the payment is recorded, processing, and waits for the acquirer
      let stateWhenAnswered: unknown;
      const replay = c.pay(paymentBody(4000), 'slow-order').then(async (r) => {
        const { rows } = await t.testDb.db.query('SELECT processing, authorization_status FROM payments WHERE entity_id = $1 AND idempotency_key = $2', [m.entityId, 'slow-order']);
        stateWhenAnswered = rows;
        return r;
      });
      await heldReads(t.testDb.db, 'slow-order', 3, replay);
      g.open();
      const [firstRes, replayRes] = await Promise.all([first, replay]);
      assert.equal(firstRes.statusCode, 200, firstRes.body);
      assert.equal(firstRes.json().authorization.status, 'AUTHORIZED');
      assert.deepEqual(stateWhenAnswered, [{ processing: false, authorization_status: 'AUTHORIZED' }], 'the replay was answered once the payment was authorized');
      expectViolation(replayRes, '/v2/payments', firstRes.json().id);
      const { rows } = await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments WHERE entity_id = $1 AND idempotency_key = $2', [m.entityId, 'slow-order']);
      assert.equal(rows[0]!.n, 1);
    } finally {
      g.close();
    }
  });
});

describe('a replay is held a bounded number of attempts only', () => {
  let t: TestApp;
  let c: ReturnType<typeof client>;
  before(async () => {
    t = await createTestApp({ simInline: false, idempotencyHoldAttempts: 2, idempotencyHoldIntervalMs: 50 });
    c = client(t, await t.createMerchant('Bounded'));
  });
  after(() => t.close());

  it('answers the replay 409 while the first call is still in flight; GET then settles', async () => {
    const p = await authorized(c, 5000);
    const g = gate(t, 'capture');
    try {
      const first = c.op(p.id, 'captures', { amount: 2000 }, 'never-waits');
      await g.entered;
      // The gate stays shut until the replay is answered: the hold has to end by itself.
      const replay = await c.op(p.id, 'captures', { amount: 2000 }, 'never-waits');
      const stored = await c.get(p.id, true);
      assert.equal(stored.captures.length, 1);
      const opId = stored.captures[0].id as string;
      assert.equal(stored.captures[0].status, 'PENDING', 'the first call is still in flight');
      expectViolation(replay, `/v2/payments/${p.id}/captures`, opId);
      // While in flight the capture reserves its amount: nobody else can take it.
      assert.equal(expectProblem(await c.op(p.id, 'captures', { amount: 3001 }), 400).available_amount, 3000);

      g.open();
      const firstRes = await first;
      assert.equal(firstRes.statusCode, 200, firstRes.body);
      assert.equal(firstRes.headers['x-created-operation-id'], opId);
      const s = await c.get(p.id);
      assert.equal(s.captures.length, 1);
      assert.equal(s.captures[0].id, opId);
      assert.equal(s.captures[0].status, 'SUCCESS');
      assert.equal(s.amounts.total_captured, 2000);
      assert.equal(s.amounts.available_to_capture, 3000);
    } finally {
      g.close();
    }
  });
});

describe('a first call that never completes (the acquirer processed it, its answer was lost)', () => {
  // Captures with this card time out at the acquirer, which did process them: the first
  // call answers with the capture still PENDING and never completes it. The acquirer
  // reveals the outcome 1000 ms after the call, by the app's clock.
  const TIMES_OUT = '4000000000000416';
  const clock = new TestClock();
  let t: TestApp;
  let c: ReturnType<typeof client>;
  before(async () => {
    t = await createTestApp({ idempotencyHoldAttempts: 2, idempotencyHoldIntervalMs: 50 }, { clock: clock.now });
    c = client(t, await t.createMerchant('Lost answers'));
  });
  after(() => t.close());

  it('the replay ends in 409 naming the PENDING capture, and GET /v2/payments/{id} settles the state', async () => {
    const p = await authorized(c, 6000, TIMES_OUT);
    const first = await c.op(p.id, 'captures', { amount: 6000 }, 'timeout-cap');
    assert.equal(first.statusCode, 200, first.body);
    const opId = first.headers['x-created-operation-id'] as string;
    assert.equal(first.json().captures[0].status, 'PENDING');
    expectViolation(await c.op(p.id, 'captures', { amount: 6000 }, 'timeout-cap'), `/v2/payments/${p.id}/captures`, opId);
    clock.advance(1001);
    const s = await c.get(p.id);
    assert.equal(s.captures.length, 1);
    assert.equal(s.captures[0].id, opId);
    assert.equal(s.captures[0].status, 'SUCCESS');
    assert.equal(s.amounts.total_captured, 6000);
    // Still the same answer for a late replay.
    expectViolation(await c.op(p.id, 'captures', { amount: 6000 }, 'timeout-cap'), `/v2/payments/${p.id}/captures`, opId);
  });

  it('the recovery step settles it: PENDING, then SUCCESS after recovery.runOnce', async () => {
    const p = await authorized(c, 4000, TIMES_OUT);
    const res = await c.op(p.id, 'captures', { amount: 4000 }, 'lost-answer');
    assert.equal(res.statusCode, 200, res.body);
    const opId = String(res.headers['x-created-operation-id']);
    const capture = res.json().captures[0];
    assert.equal(capture.id, opId);
    assert.equal(capture.status, 'PENDING');
    assert.equal(capture.partner_transactions[0].status, 'PENDING');
    assert.equal(res.json().amounts.total_captured, 0);
    // Still reserved: a second capture cannot take the amount in flight.
    expectProblem(await c.op(p.id, 'captures', { amount: 1 }), 400);

    clock.advance(1001);
    assert.equal((await c.get(p.id, true)).captures[0].status, 'PENDING', 'the stored view asks no partner');
    await t.app.services.recovery.runOnce(0);
    const after = await c.get(p.id, true);
    assert.equal(after.captures.length, 1);
    assert.equal(after.captures[0].status, 'SUCCESS');
    assert.equal(after.captures[0].partner_transactions[0].status, 'SUCCESS');
    assert.equal(after.amounts.total_captured, 4000);
    assert.equal(after.amounts.available_to_capture, 0);
    // The replay of that key now names the settled capture.
    expectViolation(await c.op(p.id, 'captures', { amount: 4000 }, 'lost-answer'), `/v2/payments/${p.id}/captures`, opId);
  });
});
