// Codes under concurrency and replay, blocked users, logout, and the redirect URIs' own
// query strings: each refusal is clear and issues nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { jwtVerify } from 'jose';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import {
  type Client, FORM, PASSWORD, alertOf, authorizeRequest, basic, codeFor, cookieOf, count, createClient, createUser, exchange, introspect, signIn,
} from './idp-helpers.ts';

const CB = 'https://rp.example/callback';

describe('identity provider: codes, blocked users, logout', () => {
  let t: TestApp;
  let app: Client;

  before(async () => {
    t = await createTestApp();
    await createUser(t, 'ada@example.com');
    app = await createClient(t, { name: 'Shop', callback_urls: [CB, 'https://rp.example/cb?tenant=a%20b&x=1'] });
  });
  after(() => t.close());

  it('of concurrent exchanges of one code exactly one gets tokens; the replays revoke them', async () => {
    const { code, verifier } = await codeFor(t.app, app, CB, 'ada@example.com');
    const results = await Promise.all(Array.from({ length: 8 }, () => exchange(t.app, app, code, CB, verifier)));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1, results.map((r) => r.statusCode).join(','));
    for (const r of results.filter((x) => x.statusCode !== 200)) {
      assert.equal(r.statusCode, 400);
      assert.equal(r.json().error, 'invalid_grant');
    }
    assert.deepEqual(await introspect(t.app, app, ok[0]!.json().access_token), { active: false }, 'the replays revoked the one token issued');
    assert.equal(await count(t, `SELECT count(*)::int AS n FROM idp_tokens WHERE code_hash IS NOT NULL AND revoked_at IS NULL`), 0);
  });

  it('a replayed code: invalid_grant, and the first tokens introspect as inactive', async () => {
    const { code, verifier } = await codeFor(t.app, app, CB, 'ada@example.com');
    const first = await exchange(t.app, app, code, CB, verifier);
    assert.equal(first.statusCode, 200, first.body);
    const token = first.json().access_token;
    assert.equal((await introspect(t.app, app, token)).active, true);
    const again = await exchange(t.app, app, code, CB, verifier);
    assert.equal(again.json().error, 'invalid_grant');
    assert.match(again.json().error_description, /already used/);
    assert.deepEqual(await introspect(t.app, app, token), { active: false });
  });

  it('a verifier that is not RFC 7636 shaped, or a verifier without challenge, is invalid_grant and burns the code', async () => {
    const { code, verifier } = await codeFor(t.app, app, CB, 'ada@example.com');
    const tokens = await count(t, 'SELECT count(*)::int AS n FROM idp_tokens');
    const bad = await exchange(t.app, app, code, CB, 'short');
    assert.equal(bad.json().error, 'invalid_grant');
    assert.match(bad.json().error_description, /code_verifier/);
    assert.equal((await exchange(t.app, app, code, CB, verifier)).json().error, 'invalid_grant', 'burnt: the right verifier comes too late');
    assert.equal(await count(t, 'SELECT count(*)::int AS n FROM idp_tokens'), tokens);
    const a = authorizeRequest(app.client_id, CB, { code_challenge: '', code_challenge_method: '' });
    const res = await signIn(t.app, a.url, { email: 'ada@example.com', password: PASSWORD });
    const plainCode = new URL(String(res.headers.location)).searchParams.get('code')!;
    const downgrade = await exchange(t.app, app, plainCode, CB, 'x'.repeat(43));
    assert.equal(downgrade.json().error, 'invalid_grant', 'no PKCE downgrade');
  });

  it('refuses code_challenge_method plain or missing, and a redirect_uri with a fragment', async () => {
    for (const method of ['plain', '']) {
      const a = authorizeRequest(app.client_id, CB, { code_challenge_method: method });
      const res = await t.app.inject({ url: a.url });
      assert.equal(res.statusCode, 303);
      const back = new URL(String(res.headers.location));
      assert.equal(back.searchParams.get('error'), 'invalid_request');
      assert.equal(back.searchParams.get('state'), a.state);
      assert.equal(back.searchParams.get('code'), null);
    }
    const frag = await t.app.inject({ url: authorizeRequest(app.client_id, `${CB}#x`).url });
    assert.equal(frag.statusCode, 400);
    assert.equal(frag.headers.location, undefined);
  });

  it("keeps a registered redirect URI's own query string byte for byte and adds code, state and iss", async () => {
    const registered = 'https://rp.example/cb?tenant=a%20b&x=1';
    const a = authorizeRequest(app.client_id, registered);
    const res = await signIn(t.app, a.url, { email: 'ada@example.com', password: PASSWORD });
    const location = String(res.headers.location);
    assert.ok(location.startsWith(`${registered}&code=`), location);
    const code = new URL(location).searchParams.get('code')!;
    assert.equal((await exchange(t.app, app, code, registered, a.verifier)).statusCode, 200);
  });

  it("messenger_code: authorization_code is appended to the messenger's query string as it was sent", async () => {
    const linking = 'https://messenger.example/account_linking';
    const bot = await createClient(t, { name: 'Bot', callback_urls: [linking], response_types: ['messenger_code'] });
    const sent = `${linking}?psid=4%202&account_linking_token=a+b%2F`; // only the messenger's parameters may be added (issue 14)
    const q = new URLSearchParams({ response_type: 'messenger_code', client_id: bot.client_id, redirect_uri: sent, account_linking_token: 'ALT' });
    const res = await signIn(t.app, `/oauth/authorize?${q}`, { email: 'ada@example.com', password: PASSWORD });
    const location = String(res.headers.location);
    assert.match(location, /^https:\/\/messenger\.example\/account_linking\?psid=4%202&account_linking_token=a\+b%2F&authorization_code=[A-Za-z0-9_-]{43}$/);
    const code = new URL(location).searchParams.get('authorization_code')!;
    assert.equal((await exchange(t.app, bot, code, linking)).statusCode, 200);
    const cancelled = await signIn(t.app, `/oauth/authorize?${q}`, { cancel: '1' });
    assert.equal(cancelled.headers.location, `${sent}&error=access_denied`);
  });

  it('a blocked user cannot sign in (same message as a wrong password), nor use a session, a code or a token issued before', async () => {
    const { id } = await createUser(t, 'blocked@example.com');
    const before = await codeFor(t.app, app, CB, 'blocked@example.com');
    const tokens = (await exchange(t.app, app, before.code, CB, before.verifier)).json();
    const pending = await codeFor(t.app, app, CB, 'blocked@example.com');
    await t.testDb.db.query('UPDATE idp_users SET blocked = true WHERE id = $1', [id]);

    const a = authorizeRequest(app.client_id, CB);
    const refused = await signIn(t.app, a.url, { email: 'blocked@example.com', password: PASSWORD });
    const wrong = await signIn(t.app, a.url, { email: 'ada@example.com', password: 'not the password' });
    assert.equal(refused.statusCode, 200);
    assert.equal(refused.headers.location, undefined);
    assert.equal(alertOf(refused.body), alertOf(wrong.body));
    const withSession = await t.app.inject({ url: a.url, headers: { cookie: before.session } });
    assert.equal(withSession.statusCode, 200, 'the sign-in page again, no code');
    assert.match(withSession.body, /<form/);
    assert.equal((await exchange(t.app, app, pending.code, CB, pending.verifier)).json().error, 'invalid_grant');
    assert.equal((await t.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${tokens.access_token}` } })).statusCode, 401);
    assert.deepEqual(await introspect(t.app, app, tokens.access_token), { active: false });
  });

  it('logout ends the session everywhere and goes back only to a registered URL (openid-client builds the URL)', async () => {
    const { session, code, verifier } = await codeFor(t.app, app, CB, 'ada@example.com');
    const idToken = (await exchange(t.app, app, code, CB, verifier)).json().id_token as string;
    const a = authorizeRequest(app.client_id, CB);
    assert.equal((await t.app.inject({ url: a.url, headers: { cookie: session } })).statusCode, 303, 'signed in: straight back with a code');

    const discovery = (await t.app.inject({ url: '/.well-known/openid-configuration' })).json();
    assert.equal(discovery.end_session_endpoint, 'http://payd.test/oauth/logout');
    const config = new client.Configuration(discovery, app.client_id, app.client_secret);
    client.allowInsecureRequests(config); // the test issuer is http://payd.test
    const end = client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: CB, state: 'bye' });
    const out = await t.app.inject({ url: `${end.pathname}${end.search}`, headers: { cookie: session } });
    assert.equal(out.statusCode, 303, out.body);
    assert.equal(out.headers.location, `${CB}?state=bye`);
    assert.match(String(cookieOf(out, 'payd_idp_session')), /^payd_idp_session=$/);
    assert.equal((await t.app.inject({ url: a.url, headers: { cookie: session } })).statusCode, 200, 'the old cookie opens nothing');

    const elsewhere = await t.app.inject({ url: `/oauth/logout?${new URLSearchParams({ client_id: app.client_id, post_logout_redirect_uri: 'https://evil.example/' })}` });
    assert.equal(elsewhere.statusCode, 200);
    assert.equal(elsewhere.headers.location, undefined);
    assert.match(elsewhere.body, /signed out/, 'no session: nothing to confirm');
  });

  it('the sign-in page: labels, viewport, strict CSP, HttpOnly SameSite=Lax cookies; a post without the CSRF token issues nothing', async () => {
    const a = authorizeRequest(app.client_id, CB);
    const page = await t.app.inject({ url: a.url });
    assert.match(page.body, /<label for="email">/);
    assert.match(page.body, /<label for="password">/);
    assert.match(page.body, /name="viewport"/);
    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline/);
    assert.match(String(page.headers['set-cookie']), /HttpOnly; SameSite=Lax/);
    const codes = await count(t, 'SELECT count(*)::int AS n FROM idp_codes');
    const noCsrf = await signIn(t.app, a.url, { email: 'ada@example.com', password: PASSWORD }, { dropCsrf: true });
    assert.equal(noCsrf.statusCode, 403);
    const noCookie = await t.app.inject({ method: 'POST', url: '/oauth/authorize/login', headers: FORM, payload: new URLSearchParams({
      ...Object.fromEntries(new URL(a.url, 'http://x').searchParams), csrf: 'forged', email: 'ada@example.com', password: PASSWORD,
    }).toString() });
    assert.equal(noCookie.statusCode, 403);
    assert.equal(await count(t, 'SELECT count(*)::int AS n FROM idp_codes'), codes, 'no code issued');
  });

  it('the id_token of a rotated secret verifies with the new secret only', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/admin/v1/identity/applications', headers: t.adminHeaders, payload: { name: 'R', callback_urls: [CB] } });
    const c = res.json() as Client;
    await t.testDb.db.query(`UPDATE idp_applications SET management_scopes = '["update:clients"]' WHERE client_id = $1`, [c.client_id]);
    const mgmt = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(c) }, payload: new URLSearchParams({ grant_type: 'client_credentials' }).toString() });
    const rotated = await t.app.inject({ method: 'POST', url: `/api/v2/clients/${c.client_id}/rotate-secret`, headers: { authorization: `Bearer ${mgmt.json().access_token}` } });
    assert.equal(rotated.statusCode, 200, rotated.body);
    const fresh = { client_id: c.client_id, client_secret: rotated.json().client_secret as string };
    assert.notEqual(fresh.client_secret, c.client_secret);
    const { code, verifier } = await codeFor(t.app, fresh, CB, 'ada@example.com');
    assert.equal((await exchange(t.app, c, code, CB, verifier)).statusCode, 401, 'the old secret no longer authenticates');
    const again = await codeFor(t.app, fresh, CB, 'ada@example.com');
    const tokens = await exchange(t.app, fresh, again.code, CB, again.verifier);
    assert.equal(tokens.statusCode, 200, tokens.body);
    await jwtVerify(tokens.json().id_token, new TextEncoder().encode(fresh.client_secret), { issuer: 'http://payd.test', audience: c.client_id });
    await assert.rejects(jwtVerify(tokens.json().id_token, new TextEncoder().encode(c.client_secret)));
  });
});
