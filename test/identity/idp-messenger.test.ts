// Messenger account linking (response_type=messenger_code): the account-linking URL is
// matched by its base, the code is appended to the messenger's own query string, a
// cancelled or refused login goes back with error=access_denied and no code, and the
// merchant exchanges the code with redirect_uri equal to the account-linking URL.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../helpers/app.ts';

const LINKING = 'https://messenger.example/account_linking';
const PASSWORD = 'correct horse battery staple';

describe('identity provider: messenger account linking', () => {
  let t: TestApp;
  let app: { client_id: string; client_secret: string };

  before(async () => {
    t = await createTestApp();
    const post = async (url: string, payload: object) => {
      const res = await t.app.inject({ method: 'POST', url, headers: t.adminHeaders, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    };
    await post('/admin/v1/identity/users', { email: 'grace@example.com', password: PASSWORD, given_name: 'Grace', family_name: 'Hopper' });
    app = await post('/admin/v1/identity/applications', { name: 'Bot', callback_urls: [LINKING], response_types: ['messenger_code'], token_endpoint_auth_method: 'client_secret_post' });
  });
  after(() => t.close());

  const authorizeUrl = (redirect: string, extra: Record<string, string> = { account_linking_token: 'ALT-123' }) => {
    const q = new URLSearchParams({ response_type: 'messenger_code', client_id: app.client_id, redirect_uri: redirect, ...extra });
    return `/oauth/authorize?${q}`;
  };
  async function submit(url: string, fields: Record<string, string>) {
    const page = await t.app.inject({ url });
    assert.equal(page.statusCode, 200, page.body);
    const cookie = String(page.headers['set-cookie']).split(';')[0]!;
    const form = new URLSearchParams();
    for (const m of page.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g)) form.set(m[1]!, m[2]!.replace(/&amp;/g, '&'));
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    return t.app.inject({ method: 'POST', url: '/oauth/authorize/login', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: form.toString() });
  }

  it('appends authorization_code to the messenger\'s query string; the code exchanges with the account-linking URL', async () => {
    const res = await submit(authorizeUrl(`${LINKING}?psid=42&account_linking_token=ALT-123`), { email: 'grace@example.com', password: PASSWORD });
    assert.equal(res.statusCode, 303);
    const back = new URL(String(res.headers.location));
    assert.equal(`${back.origin}${back.pathname}`, LINKING);
    assert.equal(back.searchParams.get('psid'), '42', 'the messenger query string is kept');
    assert.equal(back.searchParams.get('account_linking_token'), 'ALT-123');
    const code = back.searchParams.get('authorization_code');
    assert.ok(code);
    assert.equal(back.searchParams.get('code'), null);
    const token = await t.app.inject({
      method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: LINKING, client_id: app.client_id, client_secret: app.client_secret }).toString(),
    });
    assert.equal(token.statusCode, 200, token.body);
    assert.ok(token.json().id_token);
  });

  it('a cancelled sign-in goes back with error=access_denied and no code', async () => {
    const res = await submit(authorizeUrl(`${LINKING}?psid=42`), { cancel: '1' });
    assert.equal(res.statusCode, 303);
    const back = new URL(String(res.headers.location));
    assert.equal(back.searchParams.get('error'), 'access_denied');
    assert.equal(back.searchParams.get('authorization_code'), null);
    assert.equal(back.searchParams.get('psid'), '42');
  });

  it('without account_linking_token: error=access_denied; another path, http, or an unregistered host: an error page', async () => {
    const noToken = await t.app.inject({ url: authorizeUrl(LINKING, {}) });
    assert.equal(noToken.statusCode, 303);
    assert.equal(new URL(String(noToken.headers.location)).searchParams.get('error'), 'access_denied');
    for (const bad of [`${LINKING}/x`, 'http://messenger.example/account_linking', 'https://evil.example/account_linking']) {
      const res = await t.app.inject({ url: authorizeUrl(bad) });
      assert.equal(res.statusCode, 400, bad);
      assert.equal(res.headers.location, undefined);
    }
  });

  it('an application without messenger linking cannot use it, and this one cannot use the code flow', async () => {
    const q = new URLSearchParams({ response_type: 'code', client_id: app.client_id, redirect_uri: LINKING, state: 's' });
    const res = await t.app.inject({ url: `/oauth/authorize?${q}` });
    assert.equal(new URL(String(res.headers.location)).searchParams.get('error'), 'unauthorized_client');
  });
});
