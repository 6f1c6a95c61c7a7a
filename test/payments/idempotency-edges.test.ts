// Idempotency edge cases against the spec's Errors, point 5 (issue 15, item 4): "A request
// whose key was already processed on the same payment is answered 409, whether a genuine
// retry or a different operation reusing the key". The key is looked at before the body
// is validated, and the key that created a payment counts as processed on that payment.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
const body = { amount: 5000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 5000, instrument: card }] };

describe('idempotency: the key before the body, and the creation key', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Keys shop');
  });
  after(() => t.close());

  const post = (url: string, key: string, payload: unknown, auth = m.auth) =>
    t.app.inject({ method: 'POST', url, headers: { ...auth, 'x-idempotency-key': key }, payload: payload as Record<string, unknown> });
  const create = async (key: string) => {
    const res = await post('/v2/payments', key, body);
    assert.equal(res.statusCode, 200, res.body);
    return res.json().id as string;
  };

  it('answers 409 to a replayed creation key even when the replay\'s body is invalid; a new key with that body is 400', async () => {
    const id = await create('edge-create-1');
    const replay = expectProblem(await post('/v2/payments', 'edge-create-1', { ...body, currency: 'AUD' }), 409);
    assert.equal(replay.resource_id, id);
    expectProblem(await post('/v2/payments', 'edge-create-new', { ...body, currency: 'AUD' }), 400);
  });

  it('answers 409 to a replayed capture key even when the replay\'s body is invalid', async () => {
    const id = await create('edge-create-2');
    const first = await post(`/v2/payments/${id}/captures`, 'edge-capture-2', { amount: 1000 });
    assert.equal(first.statusCode, 200, first.body);
    const opId = String(first.headers['x-created-operation-id']);
    const replay = expectProblem(await post(`/v2/payments/${id}/captures`, 'edge-capture-2', { amount: 'lots' }), 409);
    assert.equal(replay.resource_id, opId);
    // A different operation reusing the key, with a body of its own that fails: 409 too.
    expectProblem(await post(`/v2/payments/${id}/refunds`, 'edge-capture-2', { amount: -1 }), 409);
    expectProblem(await post(`/v2/payments/${id}/captures`, 'edge-capture-new', { amount: 'lots' }), 400);
  });

  it('treats the key that created a payment as processed on it: a capture, refund or void reusing it is 409 naming the payment', async () => {
    const id = await create('edge-create-3');
    for (const [suffix, payload] of [['captures', { amount: 1000 }], ['refunds', { amount: 100 }], ['voids', {}], ['captures', { amount: 'x' }]] as const) {
      const res = expectProblem(await post(`/v2/payments/${id}/${suffix}`, 'edge-create-3', payload), 409);
      assert.equal(res.resource_id, id, suffix);
    }
    const p = (await t.app.inject({ url: `/v2/payments/${id}`, headers: m.auth })).json();
    assert.equal(p.amounts.total_captured, 0, 'nothing was captured');
    assert.equal(p.captures.length + p.refunds.length + p.voids.length, 0);
  });

  it('tells another entity nothing: its invalid body with our key is its own 400 (or 404), never our 409', async () => {
    const id = await create('edge-create-4');
    const other = await t.createMerchant('Other keys shop');
    expectProblem(await post('/v2/payments', 'edge-create-4', { ...body, currency: 'AUD' }, other.auth), 400);
    const res = await post(`/v2/payments/${id}/captures`, 'edge-create-4', { amount: 'x' }, other.auth);
    assert.ok(res.statusCode === 400 || res.statusCode === 404, res.body);
  });
});
