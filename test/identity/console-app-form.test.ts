// The administration console's application form (POST /console/applications/:id): a
// change the Management API would refuse (no callback URL, a URL that is not absolute or
// not https, an origin with a path) shows the form again, 400, with the reason and what
// was typed, and changes nothing; a valid one is saved. The console signs its
// administrator in through the provider's own authorization-code flow (PKCE), and out
// (with the form's CSRF token) of the provider as well.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { type Client, FORM, PASSWORD, alertOf, cookieOf, createClient, createUser, hiddenFields, signIn } from './idp-helpers.ts';

const CB = 'https://rp.example/callback';

describe('identity console: the application form', () => {
  let t: TestApp;
  let client: Client;
  let cookie: string;

  before(async () => {
    t = await createTestApp({ baseUrl: 'https://payd.test' }); // (the console's redirect_uri must be https)
    await createUser(t, 'console-admin@example.com', { is_admin: true });
    client = await createClient(t, { name: 'Shop', callback_urls: [CB], allowed_origins: ['https://rp.example'] });
    // The console's sign-in: /console sends to /oauth/authorize (its PKCE state in a
    // cookie), the provider signs the administrator in and returns to the callback.
    const start = await t.app.inject({ url: '/console' });
    assert.equal(start.statusCode, 303, start.body);
    const pkce = cookieOf(start, 'payd_console_login');
    assert.ok(pkce, 'the PKCE cookie');
    const authorize = new URL(start.headers.location as string);
    const signedIn = await signIn(t.app, `${authorize.pathname}${authorize.search}`, { email: 'console-admin@example.com', password: PASSWORD });
    assert.equal(signedIn.statusCode, 303, signedIn.body);
    const back = new URL(signedIn.headers.location as string);
    const callback = await t.app.inject({ url: `${back.pathname}${back.search}`, headers: { cookie: pkce } });
    assert.equal(callback.statusCode, 303, callback.body);
    cookie = cookieOf(callback, 'payd_console')!;
  });
  after(() => t?.close());

  const submit = async (fields: Record<string, string>): Promise<LightMyRequestResponse> => {
    const page = await t.app.inject({ url: `/console/applications/${client.client_id}`, headers: { cookie } });
    assert.equal(page.statusCode, 200, page.body);
    const form = hiddenFields(page.body);
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    return t.app.inject({ method: 'POST', url: `/console/applications/${client.client_id}`, headers: { ...FORM, cookie }, payload: form.toString() });
  };
  const stored = async () => (await t.testDb.db.query<{ callback_urls: string[]; allowed_origins: string[] }>(
    'SELECT callback_urls, allowed_origins FROM idp_applications WHERE client_id = $1', [client.client_id])).rows[0]!;

  it('refuses a change the Management API refuses: the form again, 400, the reason and what was typed; nothing saved', async () => {
    const cases: Array<[Record<string, string>, RegExp, string]> = [
      [{ callback_urls: '', allowed_origins: 'https://rp.example' }, /At least one Allowed Callback URL is needed/, ''],
      [{ callback_urls: 'not a url', allowed_origins: '' }, /callback_urls\[0\]: is not an absolute URL/, 'not a url'],
      [{ callback_urls: 'http://rp.example/cb', allowed_origins: '' }, /callback_urls\[0\]: must use https/, 'http://rp.example/cb'],
      [{ callback_urls: CB, allowed_origins: 'https://rp.example/path' }, /allowed_origins\[0\]: must be an origin/, 'https://rp.example/path'],
    ];
    for (const [fields, reason, typed] of cases) {
      const res = await submit(fields);
      assert.equal(res.statusCode, 400, `${JSON.stringify(fields)}: ${res.body.slice(0, 200)}`);
      assert.match(alertOf(res.body) ?? '', reason);
      if (typed) assert.ok(res.body.includes(typed), 'what was typed is shown again');
      assert.deepEqual(await stored(), { callback_urls: [CB], allowed_origins: ['https://rp.example'] });
    }
  });

  it('saves a valid change and goes back to the list', async () => {
    const res = await submit({ callback_urls: `${CB}\nhttps://rp.example/callback2`, allowed_origins: 'https://rp.example' });
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, '/console');
    assert.deepEqual(await stored(), { callback_urls: [CB, 'https://rp.example/callback2'], allowed_origins: ['https://rp.example'] });
  });

  // Issue 40: the all-applications scope (and every other) is granted by a console
  // administrator or the operator, never through the Management API.
  it('grants and withdraws Management API scopes (audited with the administrator), refuses an unknown scope', async () => {
    const scopes = async () => (await t.testDb.db.query<{ s: string[] }>('SELECT management_scopes AS s FROM idp_applications WHERE client_id = $1', [client.client_id])).rows[0]!.s;
    const page = await t.app.inject({ url: `/console/applications/${client.client_id}`, headers: { cookie } });
    assert.match(page.body, /<legend>Management API scopes<\/legend>/);
    assert.match(page.body, /name="scope" value="manage:all_clients"/);
    const post = async (checked: string[]) => {
      const form = hiddenFields(page.body);
      form.set('callback_urls', CB);
      form.set('allowed_origins', 'https://rp.example');
      for (const c of checked) form.append('scope', c);
      return t.app.inject({ method: 'POST', url: `/console/applications/${client.client_id}`, headers: { ...FORM, cookie }, payload: form.toString() });
    };
    const bad = await post(['read:users', 'root:everything']);
    assert.equal(bad.statusCode, 400, bad.body.slice(0, 200));
    assert.match(alertOf(bad.body) ?? '', /root:everything is not a Management API scope/);
    assert.deepEqual(await scopes(), []);
    assert.equal((await post(['read:clients', 'update:clients', 'manage:all_clients'])).statusCode, 303);
    assert.deepEqual(await scopes(), ['read:clients', 'update:clients', 'manage:all_clients']);
    assert.equal((await post(['read:clients'])).statusCode, 303);
    assert.deepEqual(await scopes(), ['read:clients']);
    const audit = (await t.testDb.db.query<{ actor: string; changes: Record<string, { from: unknown; to: unknown }> }>(
      'SELECT actor, changes FROM idp_application_audit WHERE client_id = $1 ORDER BY at', [client.client_id])).rows;
    const granted = audit.find((x) => JSON.stringify(x.changes.management_scopes?.to) === JSON.stringify(['read:clients', 'update:clients', 'manage:all_clients']));
    assert.ok(granted, 'the grant is in the audit');
    assert.equal(granted.actor, 'console-admin@example.com');
    // The Management API itself has no way to grant a scope, to itself or another.
    const mgmt = await createClient(t, { name: 'Back office', callback_urls: ['https://bo.example/cb'], management_scopes: ['update:clients', 'create:clients'] });
    const token = (await t.app.inject({ method: 'POST', url: '/oauth/token', headers: FORM, payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: mgmt.client_id, client_secret: mgmt.client_secret }).toString() })).json().access_token;
    const self = await t.app.inject({ method: 'PATCH', url: `/api/v2/clients/${mgmt.client_id}`, headers: { authorization: `Bearer ${token}` }, payload: { management_scopes: ['manage:all_clients'] } });
    assert.equal(self.statusCode, 400, self.body);
  });

  // (last: it ends the session the other tests use)
  it('signs out with the form\'s CSRF token only; signing out ends the provider\'s sign-in session too', async () => {
    const page = await t.app.inject({ url: '/console', headers: { cookie } });
    assert.equal(page.statusCode, 200, page.body);
    assert.match(page.body, /action="\/console\/logout"/);
    const csrf = hiddenFields(page.body).get('csrf')!;
    const refused = await t.app.inject({ method: 'POST', url: '/console/logout', headers: { ...FORM, cookie }, payload: 'csrf=forged' });
    assert.equal(refused.statusCode, 403);
    assert.equal((await t.app.inject({ url: '/console', headers: { cookie } })).statusCode, 200, 'still signed in');
    const out = await t.app.inject({ method: 'POST', url: '/console/logout', headers: { ...FORM, cookie }, payload: new URLSearchParams({ csrf }).toString() });
    assert.equal(out.statusCode, 200, out.body);
    assert.match(out.body, /You are signed out of the console/);
    assert.match(String(cookieOf(out, 'payd_console')), /^payd_console=;?$/, 'the cookie is cleared');
    // The old cookie no longer opens the console: its provider session has ended.
    const after = await t.app.inject({ url: '/console', headers: { cookie } });
    assert.equal(after.statusCode, 303);
    assert.match(String(after.headers.location), /\/oauth\/authorize\?/);
  });
});
