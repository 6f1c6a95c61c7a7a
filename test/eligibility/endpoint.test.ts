// POST /v2/eligible-solutions as a merchant sees it: the answer's shape, refused bodies
// naming their fields, credentials, client sessions following rule changes, several
// processes on one database, and the OpenAPI document.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildApp } from '../../src/app.ts';
import { createTestApp, expectProblem, MASTER_KEY, type Merchant, type TestApp } from '../helpers/app.ts';
import { waitFor } from '../helpers/wait.ts';
import { ALL, askSolutions, eligible, orderIn, pairs, setRules } from './helpers.ts';

const URL = '/v2/eligible-solutions';

describe('POST /v2/eligible-solutions', () => {
  let t: TestApp;
  let m: Merchant;

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('solutions');
  });
  after(() => t.close());

  it('answers the pairs for an order and a customer (full spec shapes accepted), storing nothing', async () => {
    const { rows: [before] } = await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM client_sessions');
    const res = await askSolutions(t, m, {
      amount: 15_000, currency: 'EUR', entity_id: m.entityId,
      order: {
        reference: 'o-1', net_amount: 12_500, tax_amount: 2_500, additional_data: { channel: 'web' },
        billing_address: { gender: 'FEMALE', first_name: 'Ada', last_name: 'Lovelace', address_lines: ['1 rue X'], city: 'Paris', postal_code: '75002', country_code: 'FR', province_code: 'FR-75' },
        shipments: [{ delivery_type: 'USER_DELIVERY', delivery_quickness: 'REGULAR', shipping_address: { country_code: 'FR', delivery_point_name: 'Home' }, item_lines: [{ type: 'PHYSICAL', name: 'Lamp', quantity: 1, unit_gross_price: 15_000 }] }],
        marketplace_sellers: [{ name: 'Shop', reference: 's-1', total_sales_count: 3, registration_date_time: '2024-01-01T00:00:00.000+00:00' }],
      },
      customer: { reference: 'c-1', type: 'PERSON', email: 'ada@example.com', birth_date: '1990-12-10', locale: 'fr-FR', account: { purchase_count_last_day: 0, age_indicator: 'MORE_60_DAYS' } },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.deepEqual(pairs(res.json().eligible_solutions), ALL);
    for (const s of res.json().eligible_solutions) assert.deepEqual(Object.keys(s).sort(), ['method', 'partner']);
    const { rows: [afterRows] } = await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM client_sessions');
    assert.equal(afterRows!.n, before!.n);
  });

  it('accepts the spec\'s request as is: "an order plus a customer", amount and currency being refinements', async () => {
    // Spec, POST /v2/eligible-solutions: "Request: JSON body. Its fields: not shown beyond
    // being an order plus a customer."
    const customer = { type: 'PERSON', email: 'ada@example.com' };
    const ask = async (body: Record<string, unknown>) => {
      const res = await askSolutions(t, m, body);
      assert.equal(res.statusCode, 200, res.body);
      return pairs(res.json().eligible_solutions);
    };
    // No amount, no currency: nothing filters by them.
    assert.deepEqual(await ask({ order: { reference: 'o-2' }, customer }), ALL);
    assert.deepEqual(await ask({}), ALL);
    // The order's own total (net + tax) stands for the amount: 50.00 + 10.00 is within every partner's bounds.
    assert.deepEqual(await ask({ currency: 'EUR', order: { net_amount: 5000, tax_amount: 1000 }, customer }), ALL);
    // 40.00 + 5.00 = 45.00 is under BNPL's minimum (50.00): BNPL is not offered.
    assert.deepEqual(await ask({ currency: 'EUR', order: { net_amount: 4000, tax_amount: 500 }, customer }), ['card-sim/CARD', 'gift-sim/GIFT_CARD']);
    // An explicit amount wins over the order's.
    assert.deepEqual(await ask({ amount: 4500, currency: 'EUR', order: { net_amount: 9000 } }), ['card-sim/CARD', 'gift-sim/GIFT_CARD']);
    // A currency alone filters by currency: only the card acquirer takes USD.
    assert.deepEqual(await ask({ currency: 'USD', order: { reference: 'o-3' }, customer }), ['card-sim/CARD']);
    // Without a currency an amount does not filter (bounds are per currency).
    assert.deepEqual(await ask({ amount: 1, order: { reference: 'o-4' } }), ALL);
  });

  it('refuses bad bodies with 400 naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      [{ amount: 0, currency: 'EUR' }, 'amount'],
      [{ currency: 'EUR', order: { net_amount: -1 } }, 'order.net_amount'],
      [{ amount: '100', currency: 'EUR' }, 'amount'],
      [{ amount: 10.5, currency: 'EUR' }, 'amount'],
      [{ amount: 100, currency: 'eur' }, 'currency'],
      [{ amount: 100, currency: 'EUR', order: { billing_address: { country_code: 'France' } } }, 'order.billing_address.country_code'],
      [{ amount: 100, currency: 'EUR', order: { shipments: [{ shipping_address: { country_code: 'fr' } }] } }, 'order.shipments[0].shipping_address.country_code'],
      [{ amount: 100, currency: 'EUR', order: { marketplace_sellers: 'yes' } }, 'order.marketplace_sellers'],
      [{ amount: 100, currency: 'EUR', customer: { type: 'x'.repeat(65) } }, 'customer.type'],
      [{ amount: 100, currency: 'EUR', customer: { email: 'not-an-email' } }, 'customer.email'],
      [{ amount: 100, currency: 'EUR', entity_id: 'me' }, 'entity_id'],
      [{ amount: 100, currency: 'EUR', basket: [] }, 'basket'],
    ];
    for (const [payload, name] of cases) {
      const p = expectProblem(await askSolutions(t, m, payload), 400);
      assert.ok(p.invalid_params?.some((x) => x.name === name && x.in === 'body'), `${JSON.stringify(payload)}: ${JSON.stringify(p.invalid_params)}`);
    }
    expectProblem(await t.app.inject({ method: 'POST', url: URL, headers: m.auth }), 400);
    expectProblem(await t.app.inject({ method: 'POST', url: URL, headers: { ...m.auth, 'content-type': 'application/json' }, payload: '{"amount":' }), 400);
  });

  it('needs a bearer token with scope payment-api, for its own entity', async () => {
    const payload = { amount: 10_000, currency: 'EUR' };
    expectProblem(await t.app.inject({ method: 'POST', url: URL, payload }), 401);
    expectProblem(await t.app.inject({ method: 'POST', url: URL, headers: { authorization: 'Bearer not-a-token' }, payload }), 401);
    expectProblem(await t.app.inject({ method: 'POST', url: URL, headers: { 'x-api-key': m.apiKey }, payload }), 401);
    expectProblem(await t.app.inject({ method: 'POST', url: URL, headers: t.adminHeaders, payload }), 401);
    const narrow = await t.app.services.accessTokens.issue({ entityId: m.entityId, apiKeyId: m.apiKeyId, scope: 'reporting' });
    const forbidden = expectProblem(await t.app.inject({ method: 'POST', url: URL, headers: { authorization: `Bearer ${narrow.access_token}` }, payload }), 403);
    assert.match(String(forbidden.detail), /payment-api/);
    const other = await t.createMerchant('solutions-other');
    expectProblem(await askSolutions(t, m, { ...payload, entity_id: other.entityId }), 403);
  });

  it('client sessions carry the same solutions, and follow rule changes at once', async () => {
    const s = await t.createMerchant('sessions-follow');
    const createSession = async (extra: Record<string, unknown> = {}) => {
      const res = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: s.auth, payload: { amount: 10_000, currency: 'EUR', ...extra } });
      assert.equal(res.statusCode, 200, res.body);
      return pairs(res.json().eligible_solutions);
    };
    assert.deepEqual(await createSession(), ALL);
    await setRules(t, s, [{ partner: 'bnpl-sim', billing_countries: { allow: ['FR'] } }, { partner: 'gift-sim', marketplace: true }]);
    const expected = ['card-sim/CARD', 'bnpl-sim/INSTALLMENTS_3X', 'bnpl-sim/INSTALLMENTS_4X'];
    const order = orderIn('FR');
    assert.deepEqual(await createSession({ order, customer: { type: 'PERSON' } }), expected);
    assert.deepEqual(await eligible(t, s, { order, customer: { type: 'PERSON' } }), expected);
    assert.deepEqual(await createSession({ order: orderIn('DE') }), ['card-sim/CARD']);
    // A session keeps the solutions of its creation; a new rule applies to new sessions.
    const first = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: s.auth, payload: { amount: 10_000, currency: 'EUR' } });
    await setRules(t, s, []);
    const reread = await t.app.inject({ url: `/v2/client-sessions/${first.json().id}`, headers: s.auth });
    assert.deepEqual(pairs(reread.json().eligible_solutions), ['card-sim/CARD']);
    assert.deepEqual(await createSession(), ALL);
  });

  // Each process keeps an entity's rules; a change reaches the others on its NOTIFY
  // (docs/eligibility.md: within milliseconds), so the other process is asked until then.
  it('another payd process on the same database follows a rule change on its notification', async () => {
    const second = await buildApp({ config: t.config, db: t.testDb.db, masterKey: MASTER_KEY, logger: false });
    await second.ready();
    try {
      const s = await t.createMerchant('two-processes');
      const ask = async () => {
        const res = await second.inject({ method: 'POST', url: URL, headers: s.auth, payload: { amount: 10_000, currency: 'EUR' } });
        assert.equal(res.statusCode, 200, res.body);
        return pairs(res.json().eligible_solutions);
      };
      assert.deepEqual(await ask(), ALL);
      await setRules(t, s, [{ partner: 'card-sim', enabled: false }]);
      const expected = JSON.stringify(ALL.slice(1));
      await waitFor(async () => JSON.stringify(await ask()) === expected, { timeout: 5_000, what: 'the other process to follow the change' });
    } finally {
      await second.close();
    }
  });

  it('is in the OpenAPI document with its schemas, and so are the operator routes', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const op = doc.paths['/v2/eligible-solutions']?.post;
    assert.ok(op, 'POST /v2/eligible-solutions is documented');
    assert.deepEqual(op.tags, ['Eligible solutions']);
    assert.ok(op.summary && op.description);
    assert.deepEqual(op.security, [{ bearerAuth: [] }]);
    const media = op.requestBody.content['application/json'];
    assert.equal(media.schema.$ref, '#/components/schemas/GetEligibleSolutionsRequest', 'a named request schema');
    const body = doc.components.schemas.GetEligibleSolutionsRequest;
    assert.equal(body.required, undefined, 'an order plus a customer, every field optional');
    assert.equal(body.properties.order.$ref, '#/components/schemas/Order');
    assert.equal(media.example.currency, 'EUR');
    assert.equal(op.responses['200'].description, 'The eligible solutions, in a stable order');
    assert.ok(op.responses['200'].content['application/json'].schema.properties.eligible_solutions);
    for (const status of ['400', '401', '403', '500', '503']) assert.ok(op.responses[status], status);
    // The spec lists 504 here; payd asks no partner to answer eligibility, so nothing times out (decisions.md).
    assert.equal(op.responses['504'], undefined);
    const rules = doc.paths['/admin/v1/entities/{id}/eligibility-rules'];
    assert.deepEqual(rules?.get?.tags, ['Operator']);
    assert.deepEqual(rules?.put?.tags, ['Operator']);
    assert.ok(doc.components.schemas.AdminReplaceEligibilityRulesRequest.properties.rules);
    assert.equal(rules.put.requestBody.content['application/json'].schema.$ref, '#/components/schemas/AdminReplaceEligibilityRulesRequest');
  });
});
