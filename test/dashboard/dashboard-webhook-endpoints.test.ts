// The Webhooks page's endpoints (issue 43): an admin lists every endpoint of the entity,
// adds one (URL and event types; its secret shown once), changes its events and status,
// rotates its secret, sends it a test event and deletes it after a confirmation; the API's
// checks (SSRF guard, event types, cap of 16) are said on the form, never a 5xx; operators
// and viewers get 403, a form without its CSRF token changes nothing, and another entity's
// endpoint is a 404.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Merchant, TestApp } from '../helpers/app.ts';
import { hiddenFields } from '../identity/idp-helpers.ts';
import { createDashboardApp, createMembers, dashboardClient, formOf } from '../helpers/dashboard.ts';

describe('dashboard: webhook endpoints', () => {
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  const { signInAs, get, post } = dashboardClient(() => t);

  before(async () => {
    // The SSRF guard on, as in production (PGlite turns it off by default).
    t = await createDashboardApp({ webhookAllowPrivateTargets: false });
    a = await t.createMerchant('Endpoints shop A');
    b = await t.createMerchant('Endpoints shop B');
    await createMembers(t, [[a, 'ada@ends.example', 'admin'], [a, 'olga@ends.example', 'operator'], [a, 'vic@ends.example', 'viewer'], [b, 'bea@ends.example', 'admin']]);
  });
  after(async () => {
    await t?.close();
  });

  const endpointsOf = async (m: Merchant) => (await t.testDb.db.query<{ id: string; url: string; enabled_events: string[]; status: string; secret_version: number }>(
    'SELECT id, url, enabled_events, status, secret_version FROM webhook_endpoints WHERE entity_id = $1 ORDER BY created_at', [m.entityId])).rows;
  let endpointId = '';

  it('an admin adds an endpoint with some event types (its secret shown once), and the API\'s refusals are said on the form', async () => {
    const ada = await signInAs('ada@ends.example');
    const page = await get(ada, `/dashboard/${a.entityId}/webhooks`);
    assert.equal(page.statusCode, 200, page.body);
    assert.match(page.body, /No endpoint: events are kept/);
    const csrf = formOf(page.body, /\/webhooks\/endpoints/).csrf!;
    const add = (url: string, ...events: string[]) => post(ada, `/dashboard/${a.entityId}/webhooks/endpoints`, [['csrf', csrf], ['url', url], ...events.map((e): [string, string] => ['events', e])]);

    const ssrf = await add('https://127.0.0.1/hooks', 'payment.authorized');
    assert.equal(ssrf.statusCode, 400);
    assert.match(ssrf.body, /role="alert">The endpoint was not saved: url [^<]+/);
    assert.match(ssrf.body, /id="endpoint-url"[^>]*value="https:\/\/127\.0\.0\.1\/hooks"/, 'the draft is kept');
    assert.match(ssrf.body, /value="payment\.authorized" checked/, 'the ticked types are kept');
    const noEvents = await add('https://hooks.example/payd');
    assert.equal(noEvents.statusCode, 400);
    assert.match(noEvents.body, /The endpoint was not saved: enabled_events must have at least 1 item/);
    const unknown = await add('https://hooks.example/payd', 'payment.authorized', 'payment.nope');
    assert.equal(unknown.statusCode, 400);
    assert.match(unknown.body, /The endpoint was not saved: enabled_events\[1\] &quot;payment\.nope&quot; is not an event type/);
    assert.equal((await endpointsOf(a)).length, 0, 'nothing saved');

    const added = await add('https://hooks.example/payd', 'payment.authorized', 'payment.captured');
    assert.equal(added.statusCode, 201, added.body);
    assert.match(added.body, /The endpoint is saved: https:\/\/hooks\.example\/payd receives the event types chosen\. Its signing secret, shown this once/);
    assert.match(added.body, /id="new-secret" readonly value="whsec_[^"]+"/);
    const [row] = await endpointsOf(a);
    endpointId = row!.id;
    assert.deepEqual(row!.enabled_events, ['payment.authorized', 'payment.captured']);
    assert.equal(row!.status, 'enabled');
    const list = await get(ada, `/dashboard/${a.entityId}/webhooks`);
    assert.doesNotMatch(list.body, /whsec_/, 'never shown again');
    assert.match(list.body, new RegExp(`<a href="/dashboard/${a.entityId}/webhooks/endpoints/${endpointId}">https://hooks\\.example/payd</a></td><td>payment\\.authorized, payment\\.captured</td><td class="status">Enabled</td>`));
  });

  it('the endpoint\'s page changes its events and status, rotates its secret, sends a test event; delete asks first, naming the URL', async () => {
    const ada = await signInAs('ada@ends.example');
    const at = `/dashboard/${a.entityId}/webhooks/endpoints/${endpointId}`;
    const page = await get(ada, at);
    assert.equal(page.statusCode, 200, page.body);
    const csrf = formOf(page.body, new RegExp(`/endpoints/${endpointId}`)).csrf!;
    const badStatus = await post(ada, at, [['csrf', csrf], ['events', '*'], ['status', 'paused']]);
    assert.equal(badStatus.statusCode, 400);
    assert.match(badStatus.body, /The endpoint was not saved: status must be enabled or disabled/);
    const saved = await post(ada, at, [['csrf', csrf], ['events', '*'], ['status', 'disabled']]);
    assert.equal(saved.statusCode, 303, saved.body);
    assert.deepEqual((await endpointsOf(a)).map((e) => [e.enabled_events, e.status]), [[['*'], 'disabled']]);
    assert.match((await get(ada, String(saved.headers.location))).body, /The endpoint is saved\.[^]*<dd class="status">Disabled<\/dd>[^]*<dd>All event types<\/dd>/);

    const rotated = await post(ada, `${at}/rotate`, formOf(page.body, /\/rotate/));
    assert.equal(rotated.statusCode, 200, rotated.body);
    assert.match(rotated.body, /The new signing secret \(version 2\), shown this once: copy it now\. The previous one also signs until \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC \(24 hours\)/);
    assert.match(rotated.body, /id="new-secret" readonly value="whsec_[^"]+"/);
    assert.equal((await endpointsOf(a))[0]!.secret_version, 2);

    const tested = await post(ada, `${at}/test`, formOf(page.body, /\/test/));
    assert.equal(tested.statusCode, 303, tested.body);
    const event = await get(ada, String(tested.headers.location));
    assert.equal(event.statusCode, 200, event.body);
    assert.match(event.body, /The test event is made/);
    assert.match(event.body, /<h1>Event webhook_endpoint\.test<\/h1>/);
    assert.match(event.body, /To <code>https:\/\/hooks\.example\/payd<\/code>/);

    const confirm = await get(ada, `${at}/delete`);
    assert.equal(confirm.statusCode, 200);
    assert.match(confirm.body, /Delete the endpoint <code>https:\/\/hooks\.example\/payd<\/code>\?/);
    assert.match(confirm.body, /<button type="submit" class="danger">Delete https:\/\/hooks\.example\/payd<\/button>/);
    assert.equal((await endpointsOf(a)).length, 1, 'the confirmation deletes nothing');
    const deleted = await post(ada, `${at}/delete`, formOf(confirm.body, /\/delete/));
    assert.equal(deleted.statusCode, 303);
    assert.equal((await endpointsOf(a)).length, 0);
    assert.match((await get(ada, String(deleted.headers.location))).body, /The endpoint is deleted/);
    const actions = (await t.testDb.db.query<{ action: string; user_email: string }>('SELECT action, user_email FROM dashboard_actions WHERE entity_id = $1 ORDER BY created_at', [a.entityId])).rows;
    assert.deepEqual(actions.map((x) => x.action), ['Add webhook endpoint https://hooks.example/payd', 'Change webhook endpoint https://hooks.example/payd',
      'Rotate the signing secret of webhook endpoint https://hooks.example/payd', 'Send a test event to webhook endpoint https://hooks.example/payd', 'Delete webhook endpoint https://hooks.example/payd']);
    assert.ok(actions.every((x) => x.user_email === 'ada@ends.example'));
  });

  it('the cap of 16 is said on the form (409), not a 5xx; at the cap the page says so instead of the form', async () => {
    const ada = await signInAs('ada@ends.example');
    for (let i = 0; i < 16; i++) {
      const res = await t.app.inject({ method: 'POST', url: '/v2/webhook-endpoints', headers: a.auth, payload: { url: `https://hooks.example/n${i}` } });
      assert.equal(res.statusCode, 200, res.body);
    }
    const page = await get(ada, `/dashboard/${a.entityId}/webhooks`);
    assert.match(page.body, /This entity has 16 endpoints, the most it may have: delete one to add another/);
    assert.equal((page.body.match(/\/webhooks\/endpoints\/[0-9a-f-]{36}"/g) ?? []).length, 16, 'every endpoint listed');
    const csrf = hiddenFields(page.body).get('csrf')!;
    const over = await post(ada, `/dashboard/${a.entityId}/webhooks/endpoints`, [['csrf', csrf], ['url', 'https://hooks.example/17'], ['events', '*']]);
    assert.equal(over.statusCode, 409, over.body);
    assert.match(over.body, /The endpoint was not saved: An entity has at most 16 webhook endpoints: delete one first\./);
    assert.equal((await endpointsOf(a)).length, 16);
  });

  it('operators and viewers get 403; a form without its CSRF token changes nothing; another entity\'s endpoint is a 404', async () => {
    const [target] = await endpointsOf(a);
    const at = `/dashboard/${a.entityId}/webhooks/endpoints/${target!.id}`;
    for (const email of ['olga@ends.example', 'vic@ends.example']) {
      const who = await signInAs(email);
      assert.equal((await get(who, `/dashboard/${a.entityId}/webhooks`)).statusCode, 403, email);
      assert.equal((await get(who, at)).statusCode, 403, email);
      const csrf = hiddenFields((await get(who, `/dashboard/${a.entityId}/payments`)).body).get('csrf')!;
      assert.equal((await post(who, `${at}/delete`, { csrf })).statusCode, 403, email);
      assert.equal((await post(who, `/dashboard/${a.entityId}/webhooks/endpoints`, { csrf, url: 'https://hooks.example/x', events: '*' })).statusCode, 403, email);
    }
    const ada = await signInAs('ada@ends.example');
    for (const csrf of [undefined, 'not-the-token']) {
      const form: Record<string, string> = csrf ? { csrf } : {};
      assert.equal((await post(ada, `${at}/delete`, form)).statusCode, 403);
      assert.equal((await post(ada, at, { ...form, events: 'payment.refused', status: 'disabled' })).statusCode, 403);
      assert.equal((await post(ada, `${at}/rotate`, form)).statusCode, 403);
    }
    const bea = await signInAs('bea@ends.example');
    assert.equal((await get(bea, at)).statusCode, 404, 'A\'s entity is not B\'s admin\'s');
    const underB = `/dashboard/${b.entityId}/webhooks/endpoints/${target!.id}`;
    assert.equal((await get(bea, underB)).statusCode, 404);
    assert.equal((await get(bea, `${underB}/delete`)).statusCode, 404);
    const csrf = hiddenFields((await get(bea, `/dashboard/${b.entityId}/webhooks`)).body).get('csrf')!;
    for (const action of ['', '/rotate', '/test', '/delete']) {
      const res = await post(bea, `${underB}${action}`, { csrf, events: 'payment.refused', status: 'disabled' });
      assert.equal(res.statusCode, 404, action);
    }
    const after = (await endpointsOf(a)).find((e) => e.id === target!.id)!;
    assert.deepEqual([after.enabled_events, after.status, after.secret_version], [target!.enabled_events, target!.status, target!.secret_version], 'A\'s endpoint untouched');
    assert.equal((await t.testDb.db.query('SELECT 1 FROM webhook_events WHERE entity_id = $1 AND type = $2', [b.entityId, 'webhook_endpoint.test'])).rows.length, 0);
  });
});
