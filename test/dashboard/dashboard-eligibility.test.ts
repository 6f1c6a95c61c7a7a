// The dashboard's eligibility rules page (issue 21): an admin reads the rules in plain
// words and replaces them as JSON; each refused field is named and nothing is saved; a
// form made from an older version is refused (409) instead of overwriting a change; the
// rules take effect in the API at once; operators get 403.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Merchant, TestApp } from '../helpers/app.ts';
import { hiddenFields } from '../identity/idp-helpers.ts';
import { eligible, orderIn } from '../eligibility/helpers.ts';
import { createDashboardApp, createMembers, dashboardClient } from '../helpers/dashboard.ts';

describe('dashboard: eligibility rules', () => {
  let t: TestApp;
  let a: Merchant;
  const { signInAs, get, post } = dashboardClient(() => t);

  before(async () => {
    t = await createDashboardApp();
    a = await t.createMerchant('Rules shop');
    await createMembers(t, [[a, 'ada@rules.example', 'admin'], [a, 'olga@rules.example', 'operator']]);
  });
  after(async () => {
    await t?.close();
  });

  const url = () => `/dashboard/${a.entityId}/eligibility`;
  const version = async () => (await t.app.inject({ url: `/admin/v1/entities/${a.entityId}/eligibility-rules`, headers: t.adminHeaders })).json().version as number;

  it('an admin replaces the rules as JSON; the page says them in plain words and the API applies them at once', async () => {
    const ada = await signInAs('ada@rules.example');
    const page = await get(ada, url());
    assert.equal(page.statusCode, 200, page.body);
    assert.match(page.body, /No rule: every solution is offered/);
    assert.match(page.body, /aria-current="page"[^>]*>Eligibility</);
    const form = Object.fromEntries(hiddenFields(page.body));
    const rules = [
      { description: 'BNPL in France only', partner: 'bnpl-sim', billing_countries: { allow: ['FR'] }, marketplace: false },
      { partner: 'card-sim', method: 'CARD', amounts: { EUR: { min_amount: 100, max_amount: 500000 } } },
    ];
    const saved = await post(ada, url(), { ...form, rules: JSON.stringify(rules) });
    assert.equal(saved.statusCode, 303, saved.body);
    const after = await get(ada, String(saved.headers.location));
    assert.match(after.body, /The rules are saved/);
    assert.match(after.body, /<td>bnpl-sim, every method<\/td><td>billing country in FR; not on marketplace orders<\/td><td>BNPL in France only<\/td>/);
    assert.match(after.body, /<td>card-sim, CARD<\/td><td>EUR amounts from 1\.00 EUR to 5,000\.00 EUR<\/td>/);
    assert.match(after.body, /Version 1, changed/);
    assert.deepEqual(await eligible(t, a, { order: orderIn('DE') }), ['card-sim/CARD', 'gift-sim/GIFT_CARD']);
    assert.deepEqual(await eligible(t, a, { order: orderIn('FR') }), ['card-sim/CARD', 'gift-sim/GIFT_CARD', 'bnpl-sim/INSTALLMENTS_3X', 'bnpl-sim/INSTALLMENTS_4X']);
    const action = await t.testDb.db.query(`SELECT 1 FROM dashboard_actions WHERE entity_id = $1 AND action = 'Replace eligibility rules' AND user_email = 'ada@rules.example'`, [a.entityId]);
    assert.equal(action.rows.length, 1);
  });

  it('names each refused field and saves nothing: not JSON, the schema, an unknown partner', async () => {
    const ada = await signInAs('ada@rules.example');
    const form = Object.fromEntries(hiddenFields((await get(ada, url())).body));
    const before = await version();
    const cases: Array<[string, RegExp]> = [
      ['[{"partner": "bnpl-sim",', /The rules are not JSON/],
      ['{"partner": "bnpl-sim"}', /rules must be array|rules [^<]*array/],
      [JSON.stringify([{ partner: 'card-sim', amounts: { EUR: { min_amount: -5 } } }]), /rules\[0\]\.amounts\.EUR\.min_amount [^<]+/],
      [JSON.stringify([{ partner: 'card-sim', colour: 'blue' }]), /rules\[0\][^<]*(additional|colour)/],
      [JSON.stringify([{ partner: 'no-such-acquirer' }]), /rules\[0\]\.partner [^<]+/],
    ];
    for (const [rules, reason] of cases) {
      const res = await post(ada, url(), { ...form, rules });
      assert.equal(res.statusCode, 400, `${rules}: ${res.statusCode}`);
      assert.match(res.body, /Nothing was saved/);
      assert.match(res.body, reason, rules);
      assert.ok(res.body.includes(rules.replace(/"/g, '&quot;')), 'the draft is kept in the editor');
    }
    assert.equal(await version(), before);
  });

  it('a form made from an older version is refused instead of overwriting the newer rules', async () => {
    const ada = await signInAs('ada@rules.example');
    const first = Object.fromEntries(hiddenFields((await get(ada, url())).body));
    const second = { ...first };
    const v = await version();
    assert.equal((await post(ada, url(), { ...first, rules: '[]' })).statusCode, 303);
    const stale = await post(ada, url(), { ...second, rules: JSON.stringify([{ partner: 'gift-sim', enabled: false }]) });
    assert.equal(stale.statusCode, 409, stale.body);
    assert.match(stale.body, /changed by someone else meanwhile/);
    assert.equal(await version(), v + 1);
    assert.deepEqual((await t.app.inject({ url: `/admin/v1/entities/${a.entityId}/eligibility-rules`, headers: t.adminHeaders })).json().rules, []);
  });

  it('operators get 403 and no Eligibility link', async () => {
    const olga = await signInAs('olga@rules.example');
    assert.equal((await get(olga, url())).statusCode, 403);
    const home = await get(olga, `/dashboard/${a.entityId}`);
    assert.doesNotMatch(home.body, />Eligibility</);
    assert.equal((await post(olga, url(), { csrf: hiddenFields(home.body).get('csrf')!, version: '0', rules: '[]' })).statusCode, 403);
  });
});
