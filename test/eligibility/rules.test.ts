// Eligibility rules, one kind at a time, through POST /v2/eligible-solutions: partner
// limits, currencies, amount bounds, billing and shipping countries, marketplace orders,
// customer types, disabled solutions, and how rules combine.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { ALL, eligible, orderIn, setRules } from './helpers.ts';

const BNPL = ['bnpl-sim/INSTALLMENTS_3X', 'bnpl-sim/INSTALLMENTS_4X'];
const without = (...gone: string[]) => ALL.filter((p) => !gone.includes(p));

describe('eligibility rules', () => {
  let t: TestApp;
  let m: Merchant;

  before(async () => {
    t = await createTestApp();
  });
  beforeEach(async () => {
    m = await t.createMerchant('rules');
  });
  after(() => t.close());

  it('without rules: every pair the partners\' own limits allow, in a stable order', async () => {
    assert.deepEqual(await eligible(t, m), ALL);
    // USD and JPY: only the card acquirer takes them; SEK: nobody.
    assert.deepEqual(await eligible(t, m, { currency: 'USD' }), ['card-sim/CARD']);
    assert.deepEqual(await eligible(t, m, { currency: 'JPY' }), ['card-sim/CARD']);
    assert.deepEqual(await eligible(t, m, { currency: 'SEK' }), []);
    // BNPL takes 50.00 to 3000.00 EUR (bounds inclusive); gift cards up to 500.00 EUR.
    assert.deepEqual(await eligible(t, m, { amount: 4_999 }), without(...BNPL));
    assert.deepEqual(await eligible(t, m, { amount: 5_000 }), ALL);
    assert.deepEqual(await eligible(t, m, { amount: 50_000 }), ALL);
    assert.deepEqual(await eligible(t, m, { amount: 50_001 }), without('gift-sim/GIFT_CARD'));
    assert.deepEqual(await eligible(t, m, { amount: 300_000 }), without('gift-sim/GIFT_CARD'));
    assert.deepEqual(await eligible(t, m, { amount: 300_001 }), ['card-sim/CARD']);
    assert.deepEqual(await eligible(t, m, { amount: 10_000_001 }), []);
  });

  it('currencies: a rule keeps its targets to the currencies listed', async () => {
    await setRules(t, m, [{ partner: 'card-sim', currencies: ['EUR', 'GBP'] }]);
    assert.deepEqual(await eligible(t, m), ALL);
    assert.deepEqual(await eligible(t, m, { currency: 'GBP' }), ['card-sim/CARD']);
    assert.deepEqual(await eligible(t, m, { currency: 'USD' }), []);
  });

  it('amount bounds per currency are inclusive; rules narrow partner limits, never widen them', async () => {
    await setRules(t, m, [{ partner: 'bnpl-sim', method: 'INSTALLMENTS_4X', amounts: { EUR: { min_amount: 20_000, max_amount: 500_000 } } }]);
    assert.deepEqual(await eligible(t, m, { amount: 19_999 }), without('bnpl-sim/INSTALLMENTS_4X'));
    assert.deepEqual(await eligible(t, m, { amount: 20_000 }), ALL);
    // The rule allows up to 5000.00 but the partner stops at 3000.00.
    assert.deepEqual(await eligible(t, m, { amount: 300_001 }), ['card-sim/CARD']);
    // Bounds for EUR do not touch another currency.
    await setRules(t, m, [{ partner: 'card-sim', amounts: { EUR: { max_amount: 1_000 } } }]);
    assert.deepEqual(await eligible(t, m, { currency: 'USD', amount: 5_000 }), ['card-sim/CARD']);
    assert.deepEqual(await eligible(t, m, { amount: 1_001 }), without('card-sim/CARD', ...BNPL));
    assert.deepEqual(await eligible(t, m, { amount: 1_000 }), ['card-sim/CARD', 'gift-sim/GIFT_CARD']);
  });

  it('billing countries: allow needs a known country in the list; deny refuses listed ones', async () => {
    await setRules(t, m, [{ partner: 'bnpl-sim', billing_countries: { allow: ['FR', 'BE'] } }]);
    assert.deepEqual(await eligible(t, m, { order: orderIn('FR') }), ALL);
    assert.deepEqual(await eligible(t, m, { order: orderIn('BE', 'DE') }), ALL, 'shipping does not count for billing rules');
    assert.deepEqual(await eligible(t, m, { order: orderIn('DE') }), without(...BNPL));
    assert.deepEqual(await eligible(t, m, { order: {} }), without(...BNPL), 'no billing country: an allow list does not hold');
    assert.deepEqual(await eligible(t, m), without(...BNPL), 'no order at all');

    await setRules(t, m, [{ partner: '*', billing_countries: { deny: ['KP', 'IR'] } }]);
    assert.deepEqual(await eligible(t, m, { order: orderIn('KP') }), []);
    assert.deepEqual(await eligible(t, m, { order: orderIn('FR') }), ALL);
    assert.deepEqual(await eligible(t, m), ALL, 'an unknown country passes a deny list');
  });

  it('shipping countries: every shipment must pass', async () => {
    await setRules(t, m, [{ partner: 'gift-sim', shipping_countries: { allow: ['FR'] } }]);
    assert.deepEqual(await eligible(t, m, { order: orderIn('DE', 'FR') }), ALL);
    assert.deepEqual(await eligible(t, m, { order: orderIn('FR', 'FR', 'DE') }), without('gift-sim/GIFT_CARD'));
    assert.deepEqual(await eligible(t, m, { order: orderIn('FR') }), without('gift-sim/GIFT_CARD'), 'no shipping address');

    await setRules(t, m, [{ method: 'CARD', shipping_countries: { deny: ['RU'] } }]);
    assert.deepEqual(await eligible(t, m, { order: orderIn('FR', 'FR', 'RU') }), without('card-sim/CARD'));
    assert.deepEqual(await eligible(t, m, { order: orderIn('RU', 'FR') }), ALL, 'billing does not count for shipping rules');
  });

  it('marketplace: an order with marketplace sellers (or a marketplace item line) is a marketplace order', async () => {
    const sellers = { marketplace_sellers: [{ name: 'Shop A', reference: 's-1' }] };
    const sellerLine = { shipments: [{ item_lines: [{ name: 'Lamp', is_marketplace_seller: true }] }] };
    const ownLine = { shipments: [{ item_lines: [{ name: 'Lamp', is_marketplace_seller: false }] }] };
    await setRules(t, m, [{ partner: 'bnpl-sim', marketplace: false }]);
    assert.deepEqual(await eligible(t, m, { order: sellers }), without(...BNPL));
    assert.deepEqual(await eligible(t, m, { order: sellerLine }), without(...BNPL));
    assert.deepEqual(await eligible(t, m, { order: ownLine }), ALL);
    assert.deepEqual(await eligible(t, m, { order: { marketplace_sellers: [] } }), ALL);
    assert.deepEqual(await eligible(t, m), ALL);

    await setRules(t, m, [{ partner: 'gift-sim', marketplace: true }]);
    assert.deepEqual(await eligible(t, m, { order: sellers }), ALL);
    assert.deepEqual(await eligible(t, m), without('gift-sim/GIFT_CARD'));
  });

  it('customer types: the customer type must be known and listed', async () => {
    await setRules(t, m, [{ partner: 'bnpl-sim', customer_types: ['PERSON'] }]);
    assert.deepEqual(await eligible(t, m, { customer: { type: 'PERSON', email: 'a@example.com' } }), ALL);
    assert.deepEqual(await eligible(t, m, { customer: { type: 'COMPANY' } }), without(...BNPL));
    assert.deepEqual(await eligible(t, m, { customer: { email: 'a@example.com' } }), without(...BNPL));
  });

  it('a disabled rule removes its targets; a method rule spans partners', async () => {
    await setRules(t, m, [{ partner: 'gift-sim', enabled: false }, { method: 'INSTALLMENTS_3X', enabled: false }]);
    assert.deepEqual(await eligible(t, m), ['card-sim/CARD', 'bnpl-sim/INSTALLMENTS_4X']);
    await setRules(t, m, [{ partner: '*', method: '*', enabled: false }]);
    assert.deepEqual(await eligible(t, m), []);
    await setRules(t, m, [{ enabled: true }]);
    assert.deepEqual(await eligible(t, m), ALL);
  });

  it('every rule that targets a pair must hold, whatever their order', async () => {
    const fr = { partner: '*', billing_countries: { allow: ['FR', 'DE'] } };
    const big = { partner: 'bnpl-sim', amounts: { EUR: { min_amount: 20_000 } }, marketplace: false };
    for (const rules of [[fr, big], [big, fr]]) {
      await setRules(t, m, rules);
      assert.deepEqual(await eligible(t, m, { order: orderIn('FR'), amount: 25_000 }), ALL);
      assert.deepEqual(await eligible(t, m, { order: orderIn('FR'), amount: 10_000 }), without(...BNPL));
      assert.deepEqual(await eligible(t, m, { order: { ...orderIn('DE'), marketplace_sellers: [{ name: 'S' }] }, amount: 25_000 }), without(...BNPL));
      assert.deepEqual(await eligible(t, m, { order: orderIn('IT'), amount: 25_000 }), []);
    }
    // A rule with several conditions holds only when all of them do.
    await setRules(t, m, [{ partner: 'card-sim', currencies: ['EUR'], billing_countries: { deny: ['US'] }, customer_types: ['PERSON', 'COMPANY'] }]);
    assert.deepEqual(await eligible(t, m, { order: orderIn('FR'), customer: { type: 'COMPANY' } }), ALL);
    assert.deepEqual(await eligible(t, m, { order: orderIn('US'), customer: { type: 'COMPANY' } }), without('card-sim/CARD'));
    assert.deepEqual(await eligible(t, m, { order: orderIn('FR') }), without('card-sim/CARD'));
  });

  // Issue 43 item 4: the rules applied only to the widget; the API authorized a 6,000 EUR
  // card payment and a German BNPL payment under the documented rules.
  it('the rules hold for payments created through the API too: a refused pair is a 400 naming its split part', async () => {
    await setRules(t, m, [
      { partner: 'bnpl-sim', billing_countries: { allow: ['FR', 'BE'] }, marketplace: false },
      { partner: 'card-sim', method: 'CARD', amounts: { EUR: { max_amount: 500000 } } },
    ]);
    const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
    const pay = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload });
    const big = await pay({ amount: 600000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 600000, instrument: card }] });
    assert.equal(big.statusCode, 400, big.body);
    assert.equal(big.json().invalid_params[0].name, 'split[0]');
    assert.match(big.json().invalid_params[0].reason,
      /not an eligible solution for this order: the entity's eligibility rule rules\[1\] refuses it \(card-sim\/CARD allowed only up to 500000 EUR minor units \(this payment: 600000\)\)/);
    const german = await pay({ amount: 6000, currency: 'EUR', order: orderIn('DE'), customer: { email: 'ada@example.de' }, split: [{ partner: 'bnpl-sim', method: 'INSTALLMENTS_3X', amount: 6000 }] });
    assert.equal(german.statusCode, 400, german.body);
    assert.match(german.json().invalid_params[0].reason, /rules\[0\] refuses it \(bnpl-sim allowed only for billing countries FR, BE \(this order: DE\)\)/);
    const count = await t.testDb.db.query('SELECT 1 FROM payments WHERE entity_id = $1', [m.entityId]);
    assert.equal(count.rows.length, 0, 'nothing written');
    // Within the rules: paid.
    const ok = await pay({ amount: 500000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 500000, instrument: card }] });
    assert.equal(ok.json().authorization.status, 'AUTHORIZED', ok.body);
    const french = await pay({ amount: 6000, currency: 'EUR', order: orderIn('FR'), customer: { email: 'ada@example.fr' }, split: [{ partner: 'bnpl-sim', method: 'INSTALLMENTS_3X', amount: 6000 }] });
    assert.equal(french.statusCode, 200, french.body);
  });

  it('a refusal names the first rule that refuses the part and its failing condition, whatever its kind', async () => {
    const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
    const refusal = async (rules: unknown[], payload: Record<string, unknown>) => {
      await setRules(t, m, rules);
      const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: { amount: 10_000, currency: 'EUR', ...payload } });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().invalid_params[0].name, 'split[0]');
      return res.json().invalid_params[0].reason as string;
    };
    const cardPart = (amount = 10_000) => ({ split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });
    const bnplPart = { split: [{ partner: 'bnpl-sim', method: 'INSTALLMENTS_4X', amount: 10_000 }] };
    const cases: Array<[unknown[], Record<string, unknown>, string]> = [
      [[{ partner: 'card-sim', enabled: false }], cardPart(), 'rules[0] refuses it (card-sim switched off (enabled: false))'],
      [[{ method: 'INSTALLMENTS_4X', enabled: true }, { partner: 'bnpl-sim', amounts: { EUR: { min_amount: 20_000 } } }], bnplPart,
        'rules[1] refuses it (bnpl-sim allowed only from 20000 EUR minor units (this payment: 10000))'],
      [[{ partner: '*', currencies: ['GBP'] }], cardPart(), 'rules[0] refuses it (every solution allowed only in GBP (this payment: EUR))'],
      [[{ partner: 'card-sim', billing_countries: { allow: ['FR'] } }], cardPart(), 'rules[0] refuses it (card-sim allowed only for billing countries FR (this order has no billing country))'],
      [[{ method: 'CARD', shipping_countries: { deny: ['RU', 'BY'] } }], { ...cardPart(), order: orderIn('FR', 'DE', 'BY') },
        'rules[0] refuses it (method CARD not allowed for shipping countries RU, BY (this order: DE, BY))'],
      [[{ partner: 'bnpl-sim', marketplace: false }], { ...bnplPart, order: { ...orderIn('FR'), marketplace_sellers: [{ name: 'S' }] } },
        'rules[0] refuses it (bnpl-sim not allowed on marketplace orders (this order is one))'],
      [[{ partner: 'card-sim', method: 'CARD', customer_types: ['COMPANY'] }], { ...cardPart(), customer: { type: 'PERSON', email: 'a@example.com' } },
        'rules[0] refuses it (card-sim/CARD allowed only for customer types COMPANY (this customer: PERSON))'],
    ];
    for (const [rules, payload, named] of cases) {
      const reason = await refusal(rules, payload);
      assert.ok(reason.includes(named), `${reason}\n should name: ${named}`);
    }
  });

  it('an empty rule set restores the defaults', async () => {
    await setRules(t, m, [{ partner: 'card-sim', enabled: false }]);
    assert.deepEqual(await eligible(t, m), without('card-sim/CARD'));
    await setRules(t, m, []);
    assert.deepEqual(await eligible(t, m), ALL);
  });
});
