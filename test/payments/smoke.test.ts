import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2030', cvv: '123', holder_name: 'Ada Lovelace' });

describe('payments smoke', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  it('authorizes, captures, refunds', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: {
      amount: 10000, currency: 'EUR', capture_mode: 'MANUAL', order: { reference: 'o-1' },
      split: [{ partner: 'gift-sim', method: 'GIFT_CARD', amount: 3000, instrument: { type: 'GIFT_CARD', number: '6036280000001234' } },
              { partner: 'card-sim', method: 'CARD', amount: 7000, instrument: card() }],
    } });
    assert.equal(res.statusCode, 200, res.body);
    const p = res.json();
    assert.equal(p.authorization.status, 'AUTHORIZED');
    assert.equal(p.amounts.total_authorized, 10000);
    assert.doesNotMatch(res.body, /4242424242424242/);
    const cap = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: { ...m.auth, 'x-idempotency-key': 'cap-1' }, payload: { amount: 5000 } });
    assert.equal(cap.statusCode, 200, cap.body);
    const c = cap.json();
    assert.equal(c.amounts.total_captured, 5000);
    assert.equal(c.captures[0].partner_transactions[0].method, 'GIFT_CARD');
    assert.equal(c.captures[0].partner_transactions[0].amount, 3000);
    assert.ok(cap.headers['x-created-operation-id']);
    const replay = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: { ...m.auth, 'x-idempotency-key': 'cap-1' }, payload: { amount: 5000 } });
    assert.equal(replay.statusCode, 409, replay.body);
    assert.equal(replay.json().resource_id, cap.headers['x-created-operation-id']);
    const over = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: m.auth, payload: { amount: 5001 } });
    assert.equal(over.statusCode, 400, over.body);
    const ref = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/refunds`, headers: m.auth, payload: { amount: 2500 } });
    assert.equal(ref.statusCode, 200, ref.body);
    assert.equal(ref.json().refunds[0].partner_transactions[0].method, 'CARD');
    assert.equal(ref.json().amounts.available_to_refund, 2500);
    const get = await t.app.inject({ method: 'GET', url: `/v2/payments/${p.id}`, headers: m.auth });
    assert.equal(get.statusCode, 200);
    const other = await t.createMerchant('other');
    const hidden = await t.app.inject({ method: 'GET', url: `/v2/payments/${p.id}`, headers: other.auth });
    assert.equal(hidden.statusCode, 404);
    assert.equal(hidden.body, '');
  });
});
