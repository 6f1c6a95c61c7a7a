// The operator API of eligibility rules: reading and replacing a rule set, strict
// validation that names each field and changes nothing, unknown entities, the operator
// token, and rules that stay with their entity.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { ALL, eligible, putRules, rulesUrl, setRules } from './helpers.ts';

async function stored(t: TestApp) {
  const { rows } = await t.testDb.db.query<{ n: number; sig: string | null }>(
    "SELECT count(*)::int AS n, string_agg(entity_id::text || ':' || version || ':' || rules::text, '|' ORDER BY entity_id) AS sig FROM eligibility_rules",
  );
  return rows[0];
}

describe('eligibility rules: operator API', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('rules-op');
    other = await t.createMerchant('rules-op-other');
  });
  after(() => t.close());

  it('an entity without rules reads version 0 and no rules; PUT replaces the set and counts versions', async () => {
    const empty = await t.app.inject({ url: rulesUrl(m.entityId), headers: t.adminHeaders });
    assert.equal(empty.statusCode, 200, empty.body);
    assert.deepEqual(empty.json(), { entity_id: m.entityId, version: 0, updated_at: null, rules: [] });

    const rules = [
      { description: 'BNPL in France only', partner: 'bnpl-sim', billing_countries: { allow: ['FR'] }, marketplace: false },
      { partner: 'card-sim', method: 'CARD', currencies: ['EUR', 'USD'], amounts: { EUR: { min_amount: 100, max_amount: 100 }, USD: { max_amount: 5 } } },
      { method: '*', shipping_countries: { allow: ['FR', 'BE'], deny: ['RU'] }, customer_types: ['PERSON'] },
      { partner: 'gift-sim', enabled: false },
    ];
    const first = await putRules(t, m.entityId, rules);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().version, 1);
    assert.deepEqual(first.json().rules, rules);
    assert.ok(!Number.isNaN(Date.parse(first.json().updated_at)));

    const read = await t.app.inject({ url: rulesUrl(m.entityId), headers: t.adminHeaders });
    assert.deepEqual(read.json(), first.json());

    const second = await putRules(t, m.entityId, [rules[0]]);
    assert.equal(second.json().version, 2);
    assert.deepEqual(second.json().rules, [rules[0]]);
    const cleared = await putRules(t, m.entityId, []);
    const { updated_at: _at, ...rest } = cleared.json() as Record<string, unknown>;
    assert.deepEqual(rest, { entity_id: m.entityId, version: 3, rules: [] });
  });

  it('refuses invalid rule sets naming each field, and changes nothing', async () => {
    await setRules(t, m, [{ partner: 'card-sim', currencies: ['EUR'] }]);
    const before = await stored(t);
    const cases: Array<[unknown, string[]]> = [
      [[{ partner: 'paypal' }], ['rules[0].partner']],
      [[{ partner: 'bnpl-sim', method: 'CARD' }], ['rules[0].method']],
      [[{ method: 'CRYPTO' }], ['rules[0].method']],
      [[{}, { partner: 'card-sim', amounts: { EUR: { min_amount: 5000, max_amount: 4999 } } }], ['rules[1].amounts.EUR.min_amount']],
      [[{ currencies: ['EUR'], amounts: { USD: { max_amount: 10 } } }], ['rules[0].amounts.USD']],
      [[{ billing_countries: { allow: ['FR', 'DE'], deny: ['DE'] } }], ['rules[0].billing_countries.deny']],
      [[{ partner: 'gift-sim', enabled: false, currencies: ['EUR'] }], ['rules[0].enabled']],
      [[{ currencies: ['XXX'] }], ['rules[0].currencies[0]']],
      [[{ currencies: [] }], ['rules[0].currencies']],
      [[{ currencies: ['EUR', 'EUR'] }], ['rules[0].currencies']],
      [[{ amounts: { XYZ: { min_amount: 1 } } }], ['rules[0].amounts.XYZ']],
      [[{ amounts: { EUR: {} } }], ['rules[0].amounts.EUR']],
      [[{ amounts: { EUR: { min_amount: -1 } } }], ['rules[0].amounts.EUR.min_amount']],
      [[{ amounts: { EUR: { max_amount: 1.5 } } }], ['rules[0].amounts.EUR.max_amount']],
      [[{ billing_countries: { allow: ['fr'] } }], ['rules[0].billing_countries.allow[0]']],
      [[{ shipping_countries: { allow: ['FRA'] } }], ['rules[0].shipping_countries.allow[0]']],
      [[{ shipping_countries: {} }], ['rules[0].shipping_countries']],
      [[{ marketplace: 'yes' }], ['rules[0].marketplace']],
      [[{ customer_types: ['ROBOT'] }], ['rules[0].customer_types[0]']],
      [[{ partner: 'card-sim', colour: 'red' }], ['rules[0].colour']],
      [[{ partner: '' }], ['rules[0].partner']],
      [Array.from({ length: 101 }, () => ({})), ['rules']],
      ['all', ['rules']],
    ];
    for (const [rules, names] of cases) {
      const p = expectProblem(await putRules(t, m.entityId, rules), 400);
      const got = (p.invalid_params ?? []).map((x) => x.name);
      for (const name of names) assert.ok(got.includes(name), `${JSON.stringify(rules)}: expected ${name} in ${JSON.stringify(p.invalid_params)}`);
      assert.ok(p.invalid_params!.every((x) => x.in === 'body' && x.reason.length > 0));
    }
    // Several findings at once, each named.
    const many = expectProblem(await putRules(t, m.entityId, [{ partner: 'nope' }, { method: 'NOPE' }, { amounts: { EUR: { min_amount: 2, max_amount: 1 } } }]), 400);
    assert.deepEqual(many.invalid_params!.map((x) => x.name), ['rules[0].partner', 'rules[1].method', 'rules[2].amounts.EUR.min_amount']);
    assert.match(String(many.invalid_params![0]!.reason), /card-sim/);
    // Not a body at all.
    expectProblem(await t.app.inject({ method: 'PUT', url: rulesUrl(m.entityId), headers: t.adminHeaders, payload: {} }), 400);
    expectProblem(await t.app.inject({ method: 'PUT', url: rulesUrl(m.entityId), headers: { ...t.adminHeaders, 'content-type': 'application/json' }, payload: '{"rules": [' }), 400);
    expectProblem(await t.app.inject({ method: 'PUT', url: rulesUrl(m.entityId), headers: { ...t.adminHeaders, 'content-type': 'text/plain' }, payload: 'rules' }), 415);
    assert.deepEqual(await stored(t), before);
    assert.deepEqual(await eligible(t, m, { currency: 'USD' }), []);
  });

  it('answers 404 for an unknown entity and 400 for a malformed id, creating nothing', async () => {
    const before = await stored(t);
    const ghost = crypto.randomUUID();
    expectProblem(await t.app.inject({ url: rulesUrl(ghost), headers: t.adminHeaders }), 404);
    expectProblem(await putRules(t, ghost, [{ partner: 'card-sim', enabled: false }]), 404);
    const bad = expectProblem(await t.app.inject({ url: rulesUrl('not-a-uuid'), headers: t.adminHeaders }), 400);
    assert.equal(bad.invalid_params?.[0]?.name, 'id');
    assert.equal(bad.invalid_params?.[0]?.in, 'path');
    assert.deepEqual(await stored(t), before);
  });

  it('takes the operator token only', async () => {
    const before = await stored(t);
    for (const headers of [{}, { authorization: 'Bearer wrong-token' }, m.auth, { 'x-api-key': m.apiKey }]) {
      expectProblem(await t.app.inject({ url: rulesUrl(m.entityId), headers }), 401);
      expectProblem(await t.app.inject({ method: 'PUT', url: rulesUrl(m.entityId), headers, payload: { rules: [] } }), 401);
    }
    assert.deepEqual(await stored(t), before);
  });

  it('keeps rules with their entity', async () => {
    const a = await t.createMerchant('iso-a');
    const b = await t.createMerchant('iso-b');
    await setRules(t, a, [{ partner: '*', enabled: false }]);
    assert.deepEqual(await eligible(t, a), []);
    assert.deepEqual(await eligible(t, b), ALL);
    assert.deepEqual(await eligible(t, other), ALL);
    const readB = await t.app.inject({ url: rulesUrl(b.entityId), headers: t.adminHeaders });
    assert.deepEqual(readB.json().rules, []);
    // A merchant cannot borrow another entity's rules through entity_id.
    const res = await t.app.inject({ method: 'POST', url: '/v2/eligible-solutions', headers: b.auth, payload: { amount: 10_000, currency: 'EUR', entity_id: a.entityId } });
    expectProblem(res, 403);
  });
});
