// Descriptive order and customer data is the merchant's to describe. Spec, Resources:
// "Full lists of allowed values for every enumerated field: not shown; only values seen
// are listed." So values beyond those seen, and fields the spec does not name, are
// accepted and echoed (bounded); the item-line field the spec lists as "the service" is
// taken under that name. Fields that drive behaviour stay closed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' };

/** An order and a customer with values the spec never showed and fields it never named. */
const order = {
  reference: 'desc-1',
  net_amount: 4000,
  tax_amount: 1000,
  channel: 'mobile-app',
  billing_address: { gender: 'NON_BINARY', first_name: 'Sam', country_code: 'FR', floor: 3 },
  shipments: [{
    delivery_type: 'LOCKER', delivery_quickness: 'NEXT_DAY', carrier: { name: 'La Poste', tracking: ['A1', 'B2'] },
    item_lines: [{ type: 'SUBSCRIPTION', name: 'Box', 'the service': 'monthly box', quantity: 1, unit_gross_price: 5000, color: 'blue' }],
  }],
  marketplace_sellers: [{ name: 'Shop', rating: 4.5 }],
};
const customer = {
  type: 'ASSOCIATION', gender: 'X', email: 'sam@example.com', loyalty_tier: 'gold',
  account: { age_indicator: 'LESS_30_DAYS', authentication_method: 'FEDERATED', score: 12 },
};

describe('descriptive order and customer data', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  it('accepts and echoes values beyond those seen and fields the spec does not name: payment, session, link', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: {
      amount: 5000, currency: 'EUR', order, customer, split: [{ partner: 'card-sim', method: 'CARD', amount: 5000, instrument: card }],
    } });
    assert.equal(created.statusCode, 200, created.body);
    assert.deepEqual(created.json().order, order);
    const read = await t.app.inject({ url: `/v2/payments/${created.json().id}`, headers: { ...m.auth, 'cache-control': 'max-age=60' } });
    assert.deepEqual(read.json().order, order);

    const session = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 5000, currency: 'EUR', order, customer } });
    assert.equal(session.statusCode, 200, session.body);
    assert.deepEqual(session.json().order, order);
    assert.deepEqual(session.json().customer, customer);

    const link = await t.app.inject({ method: 'POST', url: '/v2/payment-links', headers: m.auth, payload: {
      amount: 5000, currency: 'EUR', order, customer, expires_at: new Date(Date.now() + 3600_000).toISOString(),
    } });
    assert.equal(link.statusCode, 200, link.body);
    assert.deepEqual(link.json().order, order);
    assert.deepEqual(link.json().customer, customer);
  });

  it('keeps the bounds, and keeps closed what drives behaviour', async () => {
    const body = (extra: Record<string, unknown>) => ({
      amount: 5000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 5000, instrument: card }], ...extra,
    });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ order: { note: 'x'.repeat(1025) } }, 'order.note'],
      [{ order: { deep: { a: { b: { c: 1 } } } } }, 'order.deep'],
      [{ order: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])) }, 'order'],
      [{ customer: { type: 'x'.repeat(65) } }, 'customer.type'],
      [{ capture_mode: 'LATER' }, 'capture_mode'],
      [{ currency: 'XXX' }, 'currency'],
      [{ unknown_top_level: 1 }, 'unknown_top_level'],
    ];
    for (const [extra, name] of cases) {
      const p = expectProblem(await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: body(extra) }), 400);
      assert.ok(p.invalid_params?.some((x) => x.name === name), `${name}: ${JSON.stringify(p.invalid_params)}`);
    }
  });
});
