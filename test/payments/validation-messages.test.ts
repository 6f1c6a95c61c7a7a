// Validation messages name the right fix (issue 15, item 3): every invalid_params entry
// names the field and the reason; an enum lists all its allowed values; a union reports
// the branch the input was meant for (discriminated by `type` or `method`), never
// "must match a schema in anyOf" nor the other branches' demands.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { collapseUnions } from '../../src/platform/http/error-handler.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
const payment = (over: Record<string, unknown> = {}, part: Record<string, unknown> = {}) => ({
  amount: 2500, currency: 'EUR', ...over,
  split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card, ...part }],
});

describe('validation messages', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Validation shop');
  });
  after(() => t.close());

  const post = async (body: unknown) => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: body as Record<string, unknown> });
    const problem = expectProblem(res, 400);
    const params = problem.invalid_params as Array<{ name: string; reason: string }>;
    assert.ok(Array.isArray(params) && params.length > 0, JSON.stringify(problem));
    return params;
  };

  it('lists every accepted currency for a currency it does not accept', async () => {
    const params = await post(payment({ currency: 'AUD' }));
    const currency = params.find((p) => p.name === 'currency');
    assert.ok(currency, JSON.stringify(params));
    for (const c of ['EUR', 'USD', 'GBP', 'CHF']) assert.match(currency.reason, new RegExp(c), currency.reason);
    assert.match(currency.reason, /^must be one of /);
    assert.ok(!params.some((p) => /anyOf/.test(p.reason)), JSON.stringify(params));
  });

  it('lists both capture modes for a wrong one', async () => {
    const params = await post(payment({ capture_mode: 'AUTO' }));
    const mode = params.find((p) => p.name === 'capture_mode');
    assert.ok(mode, JSON.stringify(params));
    assert.match(mode.reason, /AUTOMATIC/);
    assert.match(mode.reason, /MANUAL/);
  });

  it('reports a bad card expiry on the card, not the gift card\'s type nor "anyOf"', async () => {
    const params = await post(payment({}, { instrument: { ...card, expiry_month: '13' } }));
    assert.ok(params.some((p) => p.name === 'split[0].instrument.expiry_month'), JSON.stringify(params));
    assert.ok(!params.some((p) => /GIFT_CARD|anyOf|NONE/.test(p.reason)), JSON.stringify(params));
    assert.ok(!params.some((p) => p.name === 'split[0].instrument.type'), JSON.stringify(params));
  });

  it('lists the instrument types when the type matches none', async () => {
    const params = await post(payment({}, { instrument: { ...card, type: 'WALLET' } }));
    const type = params.find((p) => p.name === 'split[0].instrument.type');
    assert.ok(type, JSON.stringify(params));
    assert.match(type.reason, /CARD/);
    assert.match(type.reason, /GIFT_CARD/);
    assert.ok(!params.some((p) => /anyOf/.test(p.reason)), JSON.stringify(params));
  });

  it('folds unions the same way on their own (Ajv error shapes)', () => {
    const literal = collapseUnions([
      { instancePath: '/currency', schemaPath: '#/properties/currency/anyOf/0/const', keyword: 'const', params: { allowedValue: 'EUR' } },
      { instancePath: '/currency', schemaPath: '#/properties/currency/anyOf/1/const', keyword: 'const', params: { allowedValue: 'USD' } },
      { instancePath: '/currency', schemaPath: '#/properties/currency/anyOf', keyword: 'anyOf', params: {} },
    ]);
    assert.deepEqual(literal, [{ instancePath: '/currency', keyword: 'enum', params: { allowedValues: ['EUR', 'USD'] } }]);
    const meant = collapseUnions([
      { instancePath: '/i/expiry_month', schemaPath: '#/properties/i/anyOf/0/properties/expiry_month/pattern', keyword: 'pattern', params: {} },
      { instancePath: '/i/type', schemaPath: '#/properties/i/anyOf/1/properties/type/const', keyword: 'const', params: { allowedValue: 'GIFT_CARD' } },
      { instancePath: '/i', schemaPath: '#/properties/i/anyOf', keyword: 'anyOf', params: {} },
    ]);
    assert.deepEqual(meant.map((e) => e.instancePath), ['/i/expiry_month']);
  });
});
