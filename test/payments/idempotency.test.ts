// The spec's idempotency rules (Errors 3, 4 and 5), one request at a time: the 409 body,
// the scopes (the entity for POST /v2/payments, the payment for captures, refunds and
// voids, across the three kinds; the key that created a payment counts as processed on
// it), reading back the first outcome (refused or failed too), the key looked at before
// the body is validated, another entity learning nothing, malformed keys, and requests
// without a key. Parallel requests, replays held while the first call is in flight and
// the bounded hold: idempotency-concurrency.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2030', cvv: '123' });
const paymentBody = (amount: number, number?: string) => ({
  amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) }],
});

type Kind = 'captures' | 'refunds' | 'voids';

function client(t: TestApp, m: Merchant) {
  const keyed = (key?: string) => ({ ...m.auth, ...(key ? { 'x-idempotency-key': key } : {}) });
  return {
    pay: (body: object, key?: string) => t.app.inject({ method: 'POST', url: '/v2/payments', headers: keyed(key), payload: body }),
    op: (id: string, kind: Kind, payload: object | undefined, key?: string) =>
      t.app.inject({ method: 'POST', url: `/v2/payments/${id}/${kind}`, headers: keyed(key), ...(payload ? { payload } : {}) }),
    get: (id: string) => t.app.inject({ method: 'GET', url: `/v2/payments/${id}`, headers: m.auth }),
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
  assert.deepEqual(
    { type: body.type, title: body.title, status: body.status, instance: body.instance, resource_id: body.resource_id },
    { type: 'urn:eu.service:write-conflict', title: 'Idempotency violation', status: 409, instance, resource_id: resourceId },
  );
  assert.equal(res.headers['x-created-operation-id'], undefined, 'a refused replay creates nothing');
  return body;
}

// One app for the file: every test uses keys of its own.
describe('idempotency keys', () => {
  let t: TestApp;
  let m: Merchant;
  let c: ReturnType<typeof client>;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Idempotency');
    c = client(t, m);
  });
  after(() => t.close());

  const count = async (sql: string, params: unknown[]): Promise<number> => {
    const { rows } = await t.testDb.db.query<{ n: number }>(sql, params);
    return Number(rows[0]!.n);
  };
  const post = (url: string, key: string, payload: unknown, auth = m.auth) =>
    t.app.inject({ method: 'POST', url, headers: { ...auth, 'x-idempotency-key': key }, payload: payload as Record<string, unknown> });

  describe('of POST /v2/payments (scoped to the entity)', () => {
    it('answers a replay 409 with exactly the spec body naming the payment, late replays too', async () => {
      const first = await c.pay(paymentBody(1000), 'order-1');
      assert.equal(first.statusCode, 200, first.body);
      const id = first.json().id as string;
      expectViolation(await c.pay(paymentBody(1000), 'order-1'), '/v2/payments', id);
      // A late replay, after other traffic, is still the same answer.
      await c.pay(paymentBody(500), 'order-2');
      expectViolation(await c.pay(paymentBody(1000), 'order-1'), '/v2/payments', id);
      assert.equal(await count('SELECT count(*)::int AS n FROM payments WHERE entity_id = $1 AND idempotency_key = $2', [m.entityId, 'order-1']), 1);
    });

    it('answers 409 for a different request reusing the key, through the API key too, and creates nothing', async () => {
      const first = await c.pay(paymentBody(2000), 'order-3');
      assert.equal(first.statusCode, 200, first.body);
      const before = await count('SELECT count(*)::int AS n FROM payments WHERE entity_id = $1', [m.entityId]);
      const txsBefore = await count('SELECT count(*)::int AS n FROM sim_partner_operations', []);
      expectViolation(await c.pay(paymentBody(9999), 'order-3'), '/v2/payments', first.json().id);
      // The same entity through its API key instead of a bearer token: same scope.
      const viaApiKey = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: { 'x-api-key': m.apiKey, 'x-idempotency-key': 'order-3' }, payload: paymentBody(7) });
      expectViolation(viaApiKey, '/v2/payments', first.json().id);
      assert.equal(await count('SELECT count(*)::int AS n FROM payments WHERE entity_id = $1', [m.entityId]), before);
      assert.equal(await count('SELECT count(*)::int AS n FROM sim_partner_operations', []), txsBefore, 'no partner was called');
    });

    it('names a refused first payment; reading it back gives the first outcome', async () => {
      const first = await c.pay(paymentBody(1500, '4000000000000002'), 'declined-1');
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(first.json().authorization.status, 'REFUSED');
      // Retrying a refusal with the same key does not authorize it this time.
      const body = expectViolation(await c.pay(paymentBody(1500), 'declined-1'), '/v2/payments', first.json().id);
      const read = await c.get(String(body.resource_id));
      assert.equal(read.statusCode, 200);
      assert.equal(read.json().authorization.status, 'REFUSED');
      assert.equal(read.json().amounts.total_authorized, 0);
    });

    it('looks at the key before the body: a replay with an invalid body is 409; a new key with that body is 400', async () => {
      const first = await c.pay(paymentBody(5000), 'edge-create-1');
      assert.equal(first.statusCode, 200, first.body);
      expectViolation(await c.pay({ ...paymentBody(5000), currency: 'AUD' }, 'edge-create-1'), '/v2/payments', first.json().id);
      expectProblem(await c.pay({ ...paymentBody(5000), currency: 'AUD' }, 'edge-create-new'), 400);
    });
  });

  describe('of captures, refunds and voids (scoped to the payment)', () => {
    it('answers a genuine capture retry 409 naming the first capture, whatever the amount', async () => {
      const p = await authorized(c, 10_000);
      const first = await c.op(p.id, 'captures', { amount: 3000 }, 'cap-1');
      assert.equal(first.statusCode, 200, first.body);
      const opId = first.headers['x-created-operation-id'] as string;
      assert.match(opId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
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

    it('answers 409 naming the first operation when the key is reused for another kind, both ways', async () => {
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
      assert.equal(await count('SELECT count(*)::int AS n FROM payment_operations WHERE payment_id = $1', [p.id]), 2);
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

    it('treats the key that created a payment as processed on it: a capture, refund or void reusing it is 409 naming the payment', async () => {
      const created = await c.pay(paymentBody(5000), 'edge-create-3');
      assert.equal(created.statusCode, 200, created.body);
      const id = created.json().id as string;
      for (const [kind, payload] of [['captures', { amount: 1000 }], ['refunds', { amount: 100 }], ['voids', {}], ['captures', { amount: 'x' }]] as const) {
        expectViolation(await c.op(id, kind, payload, 'edge-create-3'), `/v2/payments/${id}/${kind}`, id);
      }
      const p = (await c.get(id)).json();
      assert.equal(p.amounts.total_captured, 0, 'nothing was captured');
      assert.equal(p.captures.length + p.refunds.length + p.voids.length, 0);
    });

    it('looks at the key before the body: a replay with an invalid body is 409, for another kind too; a new key with it is 400', async () => {
      const p = await authorized(c, 5000);
      const first = await c.op(p.id, 'captures', { amount: 1000 }, 'edge-capture-2');
      assert.equal(first.statusCode, 200, first.body);
      const opId = String(first.headers['x-created-operation-id']);
      expectViolation(await c.op(p.id, 'captures', { amount: 'lots' }, 'edge-capture-2'), `/v2/payments/${p.id}/captures`, opId);
      // A different operation reusing the key, with a body of its own that fails: 409 too.
      expectViolation(await c.op(p.id, 'refunds', { amount: -1 }, 'edge-capture-2'), `/v2/payments/${p.id}/refunds`, opId);
      expectProblem(await c.op(p.id, 'captures', { amount: 'lots' }, 'edge-capture-new'), 400);
    });

    it('refuses a malformed key with 400 and records nothing', async () => {
      const p = await authorized(c, 2000);
      for (const key of ['has space', 'x'.repeat(256), 'é']) {
        expectProblem(await post(`/v2/payments/${p.id}/captures`, key, { amount: 100 }), 400);
      }
      assert.equal(await count('SELECT count(*)::int AS n FROM payment_operations WHERE payment_id = $1', [p.id]), 0);
    });
  });

  describe('of another entity', () => {
    let other: Merchant;
    let oc: ReturnType<typeof client>;
    before(async () => {
      other = await t.createMerchant('Other shop');
      oc = client(t, other);
    });

    it('are independent for POST /v2/payments: each entity\'s replay names its own payment', async () => {
      const mine = await c.pay(paymentBody(1000), 'shared-key');
      assert.equal(mine.statusCode, 200, mine.body);
      // Its invalid body with our key is its own 400, never our 409.
      expectProblem(await post('/v2/payments', 'shared-key', { ...paymentBody(1000), currency: 'AUD' }, other.auth), 400);
      const theirs = await oc.pay(paymentBody(1000), 'shared-key');
      assert.equal(theirs.statusCode, 200, theirs.body);
      assert.notEqual(theirs.json().id, mine.json().id);
      assert.equal(theirs.json().entity_id, other.entityId);
      expectViolation(await oc.pay(paymentBody(1000), 'shared-key'), '/v2/payments', theirs.json().id);
      expectViolation(await c.pay(paymentBody(1000), 'shared-key'), '/v2/payments', mine.json().id);
    });

    it('reveal nothing of our operations: its request on our payment with our key is 404 (or its own 400), no 409', async () => {
      const p = await authorized(c, 2000);
      const cap = await c.op(p.id, 'captures', { amount: 1000 }, 'private-key');
      assert.equal(cap.statusCode, 200, cap.body);
      const res = await oc.op(p.id, 'captures', { amount: 1000 }, 'private-key');
      assert.equal(res.statusCode, 404, res.body);
      assert.doesNotMatch(res.body, new RegExp(cap.headers['x-created-operation-id'] as string));
      // With an invalid body, and with the key that created the payment.
      const invalid = await oc.op(p.id, 'captures', { amount: 'x' }, 'private-key');
      assert.ok(invalid.statusCode === 400 || invalid.statusCode === 404, invalid.body);
      const created = await c.pay(paymentBody(1000), 'edge-create-4');
      assert.equal(created.statusCode, 200, created.body);
      const byCreationKey = await oc.op(created.json().id, 'captures', { amount: 'x' }, 'edge-create-4');
      assert.ok(byCreationKey.statusCode === 400 || byCreationKey.statusCode === 404, byCreationKey.body);
    });
  });

  describe('absent (requests without a key)', () => {
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
      assert.equal(a.statusCode, 200, a.body);
      assert.equal(b.statusCode, 200, b.body);
      assert.notEqual(a.json().id, b.json().id);
    });
  });
});
