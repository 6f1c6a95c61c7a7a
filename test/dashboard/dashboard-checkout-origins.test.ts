// The Checkout origins page (issue 42): an admin lists, adds and removes the origins that
// may embed the entity's card frame (checkout_origins, the frames' CSP frame-ancestors),
// each checked as PATCH /admin/v1/entities/{id} checks it (the field named, the draft
// kept, nothing saved); the cap of 20; operators and viewers get 403, a form without its
// CSRF token changes nothing, another entity's admin gets 404.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Merchant, TestApp } from '../helpers/app.ts';
import { hiddenFields } from '../identity/idp-helpers.ts';
import { createDashboardApp, createMembers, dashboardClient, formOf } from '../helpers/dashboard.ts';

describe('dashboard: checkout origins', () => {
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  const { signInAs, get, post } = dashboardClient(() => t);

  before(async () => {
    t = await createDashboardApp();
    a = await t.createMerchant('Origins shop A');
    b = await t.createMerchant('Origins shop B');
    await createMembers(t, [[a, 'ada@origins.example', 'admin'], [a, 'olga@origins.example', 'operator'], [a, 'vic@origins.example', 'viewer'], [b, 'bea@origins.example', 'admin']]);
  });
  after(async () => {
    await t?.close();
  });

  const originsOf = async (m: Merchant) => ((await t.app.inject({ url: `/admin/v1/entities/${m.entityId}`, headers: t.adminHeaders })).json() as { checkout_origins: string[] }).checkout_origins;
  const url = () => `/dashboard/${a.entityId}/checkout-origins`;

  it('an admin adds origins (checked as the admin API checks them: the field named, the draft kept) and removes one', async () => {
    const ada = await signInAs('ada@origins.example');
    const page = await get(ada, url());
    assert.equal(page.statusCode, 200, page.body);
    assert.match(page.body, /aria-current="page">Checkout origins</);
    assert.match(page.body, /may embed this merchant's card frame/);
    assert.match(page.body, /None listed: any site may embed the frames/);
    const csrf = formOf(page.body, /\/checkout-origins/).csrf!;
    for (const [origin, reason] of [
      ['http://shop.example', 'must be https \\(http only for localhost\\)'],
      ['https://shop.example/checkout', 'must be an origin only: scheme, host and port, no path, query or credentials'],
      ['not an origin', 'must be an origin such as https://shop.example'],
      [`https://${'a'.repeat(200)}.example`, 'must be at most 200 characters'],
    ] as const) {
      const res = await post(ada, url(), { csrf, origin });
      assert.equal(res.statusCode, 400, origin);
      assert.match(res.body, new RegExp(`role="alert">The origin was not added\\. Origin: ${reason}<`), origin);
      assert.match(res.body, new RegExp(`id="origin"[^>]*value="${origin.replace(/[./]/g, '\\$&')}"`), 'the draft is kept');
      // The admin API refuses it too (same check).
      const api = await t.app.inject({ method: 'PATCH', url: `/admin/v1/entities/${a.entityId}`, headers: t.adminHeaders, payload: { checkout_origins: [origin] } });
      assert.equal(api.statusCode, 400, origin);
    }
    assert.deepEqual(await originsOf(a), [], 'nothing saved');

    for (const origin of ['https://shop.example', 'http://localhost:5173', 'https://shop.example/', 'https://pay.shop.example:8443']) {
      const res = await post(ada, url(), { csrf, origin });
      assert.equal(res.statusCode, 303, res.body);
    }
    assert.deepEqual(await originsOf(a), ['https://shop.example', 'http://localhost:5173', 'https://pay.shop.example:8443'], 'a repeat adds nothing');
    const listed = await get(ada, url());
    assert.match(listed.body, /<code>https:\/\/shop\.example<\/code>/);
    assert.match((await get(ada, `${url()}?added=1`)).body, /The origin is added: its pages may embed the checkout's frames\./);

    const removeForm = [...listed.body.matchAll(/<form method="post" action="[^"]*\/checkout-origins\/remove"[^]*?<\/form>/g)].map((f) => f[0]).find((f) => f.includes('value="http://localhost:5173"'))!;
    const removed = await post(ada, `${url()}/remove`, Object.fromEntries(hiddenFields(removeForm)));
    assert.equal(removed.statusCode, 303);
    assert.deepEqual(await originsOf(a), ['https://shop.example', 'https://pay.shop.example:8443']);
    assert.match((await get(ada, String(removed.headers.location))).body, /The origin is removed/);
    const actions = (await t.testDb.db.query<{ action: string }>('SELECT action FROM dashboard_actions WHERE entity_id = $1 ORDER BY created_at', [a.entityId])).rows.map((r) => r.action);
    assert.deepEqual(actions, ['Add checkout origin https://shop.example', 'Add checkout origin http://localhost:5173', 'Add checkout origin https://pay.shop.example:8443', 'Remove checkout origin http://localhost:5173']);
  });

  it('the cap of 20 is said on the form; at the cap the page says the list is full', async () => {
    const ada = await signInAs('ada@origins.example');
    const full = Array.from({ length: 20 }, (_, i) => `https://s${i}.shop.example`);
    const patched = await t.app.inject({ method: 'PATCH', url: `/admin/v1/entities/${a.entityId}`, headers: t.adminHeaders, payload: { checkout_origins: full } });
    assert.equal(patched.statusCode, 200, patched.body);
    const page = await get(ada, url());
    assert.match(page.body, /The list is full: remove an origin to add another/);
    const csrf = hiddenFields(page.body).get('csrf')!;
    const over = await post(ada, url(), { csrf, origin: 'https://one-more.example' });
    assert.equal(over.statusCode, 400);
    assert.match(over.body, /The origin was not added\. Origin: cannot be added: an entity has at most 20 checkout origins \(remove one first\)/);
    assert.deepEqual(await originsOf(a), full);
    const api = await t.app.inject({ method: 'PATCH', url: `/admin/v1/entities/${a.entityId}`, headers: t.adminHeaders, payload: { checkout_origins: [...full, 'https://one-more.example'] } });
    assert.equal(api.statusCode, 400, 'the admin API has the same cap');
    await t.app.inject({ method: 'PATCH', url: `/admin/v1/entities/${a.entityId}`, headers: t.adminHeaders, payload: { checkout_origins: ['https://shop.example'] } });
  });

  it('operators and viewers get 403 and no link; a form without its CSRF token changes nothing; another entity\'s admin gets 404', async () => {
    for (const email of ['olga@origins.example', 'vic@origins.example']) {
      const who = await signInAs(email);
      assert.equal((await get(who, url())).statusCode, 403, email);
      const home = await get(who, `/dashboard/${a.entityId}/payments`);
      assert.doesNotMatch(home.body, /checkout-origins/, email);
      const csrf = hiddenFields(home.body).get('csrf')!;
      assert.equal((await post(who, url(), { csrf, origin: 'https://evil.example' })).statusCode, 403, email);
      assert.equal((await post(who, `${url()}/remove`, { csrf, origin: 'https://shop.example' })).statusCode, 403, email);
    }
    const ada = await signInAs('ada@origins.example');
    assert.equal((await post(ada, url(), { origin: 'https://evil.example' })).statusCode, 403);
    assert.equal((await post(ada, url(), { csrf: 'not-the-token', origin: 'https://evil.example' })).statusCode, 403);
    assert.equal((await post(ada, `${url()}/remove`, { origin: 'https://shop.example' })).statusCode, 403);
    const bea = await signInAs('bea@origins.example');
    assert.equal((await get(bea, url())).statusCode, 404);
    const csrf = hiddenFields((await get(bea, `/dashboard/${b.entityId}/checkout-origins`)).body).get('csrf')!;
    assert.equal((await post(bea, url(), { csrf, origin: 'https://evil.example' })).statusCode, 404);
    assert.equal((await post(bea, `${url()}/remove`, { csrf, origin: 'https://shop.example' })).statusCode, 404);
    assert.deepEqual(await originsOf(a), ['https://shop.example'], 'A\'s origins untouched');
    assert.deepEqual(await originsOf(b), []);
  });
});
