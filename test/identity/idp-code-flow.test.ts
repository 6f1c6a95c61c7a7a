// The identity provider against a relying party no one here wrote (openid-client):
// discovery, authorization code with PKCE through the hosted login page, token exchange,
// id_token validation (and its HS256 signature with the client secret), userinfo; then
// the OAuth security cases, each refused with nothing issued.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts';


const REDIRECT = 'https://rp.example/callback';
const PASSWORD = 'correct horse battery staple';

describe('identity provider: authorization code with openid-client', () => {
  let t: TestApp;
  let base: string;
  let app: { client_id: string; client_secret: string };
  let other: { client_id: string; client_secret: string };
  let publicApp: { client_id: string };
  const email = 'ada@example.com';

  let smtp: SmtpSink;

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    smtp = await startSmtpSink(); // sign-up links arrive by mail
    t = await createTestApp({ baseUrl: base, smtpUrl: smtp.url });
    await t.app.listen({ port, host: '127.0.0.1' });
    const post = async (url: string, payload: object) => {
      const res = await t.app.inject({ method: 'POST', url, headers: t.adminHeaders, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    };
    await post('/admin/v1/identity/users', { email, password: PASSWORD, given_name: 'Ada', family_name: 'Lovelace', email_verified: true });
    app = await post('/admin/v1/identity/applications', { name: 'Shop', callback_urls: [REDIRECT] });
    other = await post('/admin/v1/identity/applications', { name: 'Other', callback_urls: ['https://other.example/cb'] });
    publicApp = await post('/admin/v1/identity/applications', { name: 'SPA', callback_urls: [REDIRECT], token_endpoint_auth_method: 'none' });
    assert.ok(Buffer.from(app.client_secret, 'base64url').length >= 32, '256-bit client secret');
    const stored = await t.testDb.db.query<{ password_hash: string; secret_hash: string }>(
      'SELECT u.password_hash, a.secret_hash FROM idp_users u, idp_applications a WHERE u.email = $1 AND a.client_id = $2', [email, app.client_id]);
    assert.match(stored.rows[0]!.password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/, 'argon2id at OWASP parameters');
    assert.doesNotMatch(JSON.stringify(stored.rows[0]), new RegExp(app.client_secret), 'the secret is not stored in the clear');
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  const tokens = async () => (await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM idp_tokens')).rows[0]!.n;

  /** The hosted login: GET the authorize URL, post the form it renders; returns the final redirect. */
  async function signIn(authorizeUrl: string, opts: { password?: string; email?: string; csrf?: boolean } = {}) {
    const page = await fetch(authorizeUrl, { redirect: 'manual' });
    const html = await page.text();
    assert.equal(page.status, 200, html);
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0]!;
    const form = new URLSearchParams();
    for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g)) {
      form.set(m[1]!, m[2]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>'));
    }
    if (opts.csrf === false) form.delete('csrf');
    form.set('email', opts.email ?? email);
    form.set('password', opts.password ?? PASSWORD);
    return fetch(`${base}/oauth/authorize/login`, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: form });
  }

  async function rp(clientId: string, secret?: string) {
    return client.discovery(new URL(base), clientId, { id_token_signed_response_alg: secret ? 'HS256' : 'RS256', ...(secret ? { client_secret: secret } : {}) },
      secret ? client.ClientSecretBasic(secret) : client.None(), { execute: [client.allowInsecureRequests] });
  }

  async function authorize(clientId: string, extra: Record<string, string> = {}) {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const params = { redirect_uri: REDIRECT, scope: 'openid profile email', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce, ...extra };
    const url = new URL(`${base}/oauth/authorize`);
    url.searchParams.set('client_id', clientId);
    url.searchParams.set('response_type', 'code');
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    return { url: url.toString(), verifier, state, nonce };
  }

  it('openid-client: discovery, PKCE, hosted login, code exchange, id_token claims and HS256 signature, userinfo', async () => {
    const config = await rp(app.client_id, app.client_secret);
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT, scope: 'openid profile email', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce,
    });
    const done = await signIn(url.toString());
    assert.equal(done.status, 303);
    const callback = new URL(done.headers.get('location')!);
    assert.equal(callback.origin + callback.pathname, REDIRECT);
    const result = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    const claims = result.claims()!;
    assert.equal(claims.email, email);
    assert.equal(claims.given_name, 'Ada');
    assert.equal(claims.family_name, 'Lovelace');
    assert.equal(claims.iss, base);
    assert.equal(claims.aud, app.client_id);
    const { payload, protectedHeader } = await jwtVerify(result.id_token!, new TextEncoder().encode(app.client_secret), { issuer: base, audience: app.client_id });
    assert.equal(protectedHeader.alg, 'HS256');
    assert.equal(payload.nonce, nonce);
    const info = await client.fetchUserInfo(config, result.access_token, claims.sub);
    assert.equal(info.email, email);
    const events = await t.app.inject({ url: `/admin/v1/identity/users/${claims.sub}/events`, headers: t.adminHeaders });
    assert.equal(events.json()[0].type, 'login');
    assert.equal(events.json()[0].auth_type, 'password');
  });

  it('a confidential client that asks for RS256 gets id_tokens verifiable with the published keys', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/admin/v1/identity/applications', headers: t.adminHeaders, payload: { name: 'RS', callback_urls: [REDIRECT], id_token_signed_response_alg: 'RS256' } });
    const rs = res.json();
    assert.equal(rs.id_token_signed_response_alg, 'RS256');
    const config = await client.discovery(new URL(base), rs.client_id, { client_secret: rs.client_secret, id_token_signed_response_alg: 'RS256' }, client.ClientSecretBasic(rs.client_secret), { execute: [client.allowInsecureRequests] });
    const a = await authorize(rs.client_id);
    const callback = new URL((await signIn(a.url)).headers.get('location')!);
    const result = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce });
    const { protectedHeader } = await jwtVerify(result.id_token!, createRemoteJWKSet(new URL(`${base}/.well-known/jwks.json`)), { issuer: base, audience: rs.client_id });
    assert.equal(protectedHeader.alg, 'RS256');
  });

  it('a public client must use PKCE and gets tokens with its verifier', async () => {
    const noPkce = new URL(`${base}/oauth/authorize`);
    for (const [k, v] of Object.entries({ client_id: publicApp.client_id, response_type: 'code', redirect_uri: REDIRECT, state: 's1', scope: 'openid' })) noPkce.searchParams.set(k, v);
    const refused = await fetch(noPkce, { redirect: 'manual' });
    assert.equal(refused.status, 303);
    assert.equal(new URL(refused.headers.get('location')!).searchParams.get('error'), 'invalid_request');
    const a = await authorize(publicApp.client_id);
    const callback = new URL((await signIn(a.url)).headers.get('location')!);
    const config = await rp(publicApp.client_id);
    const result = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce });
    assert.ok(result.access_token);
    const jwks = createRemoteJWKSet(new URL(`${base}/.well-known/jwks.json`));
    const { protectedHeader } = await jwtVerify(result.id_token!, jwks, { issuer: base, audience: publicApp.client_id });
    assert.equal(protectedHeader.alg, 'RS256');
  });

  it('refuses redirect URIs that do not match exactly, with an error page and no redirect', async () => {
    for (const bad of [`${REDIRECT}/x`, `${REDIRECT}?a=1`, 'https://rp.example/callbac', 'https://evil.example/callback', 'HTTPS://rp.example/callback']) {
      const a = await authorize(app.client_id, { redirect_uri: bad });
      const res = await fetch(a.url, { redirect: 'manual' });
      assert.equal(res.status, 400, bad);
      assert.equal(res.headers.get('location'), null);
      assert.match(await res.text(), /Allowed Callback URLs/);
    }
  });

  it('redirects with error when state is missing and PKCE is not used', async () => {
    const a = await authorize(app.client_id);
    const url = new URL(a.url);
    url.searchParams.delete('state');
    url.searchParams.delete('code_challenge');
    url.searchParams.delete('code_challenge_method');
    const res = await fetch(url, { redirect: 'manual' });
    assert.equal(res.status, 303);
    const back = new URL(res.headers.get('location')!);
    assert.equal(back.searchParams.get('error'), 'invalid_request');
    assert.equal(back.searchParams.get('code'), null);
  });

  const exchange = (code: string, opts: { clientId?: string; secret?: string; verifier?: string; redirect?: string } = {}) => fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${opts.clientId ?? app.client_id}:${opts.secret ?? app.client_secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: opts.redirect ?? REDIRECT, ...(opts.verifier ? { code_verifier: opts.verifier } : {}) }),
  });
  const codeFor = async () => {
    const a = await authorize(app.client_id);
    const loc = new URL((await signIn(a.url)).headers.get('location')!);
    return { code: loc.searchParams.get('code')!, verifier: a.verifier };
  };

  it('a reused code is refused and revokes the tokens issued from it', async () => {
    const { code, verifier } = await codeFor();
    const first = await exchange(code, { verifier });
    assert.equal(first.status, 200);
    const { access_token } = (await first.json()) as { access_token: string };
    assert.equal((await fetch(`${base}/userinfo`, { headers: { authorization: `Bearer ${access_token}` } })).status, 200);
    const second = await exchange(code, { verifier });
    assert.equal(second.status, 400);
    assert.equal(((await second.json()) as { error: string }).error, 'invalid_grant');
    assert.equal((await fetch(`${base}/userinfo`, { headers: { authorization: `Bearer ${access_token}` } })).status, 401, 'revoked');
  });

  it('introspection (own tokens only) and revocation', async () => {
    const { code, verifier } = await codeFor();
    const { access_token } = (await (await exchange(code, { verifier })).json()) as { access_token: string };
    const call = (path: string, token: string, who = app) => fetch(`${base}${path}`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${who.client_id}:${who.client_secret}`).toString('base64')}` },
      body: new URLSearchParams({ token }),
    });
    const active = (await (await call('/oauth/introspect', access_token)).json()) as Record<string, unknown>;
    assert.equal(active.active, true);
    assert.equal(active.client_id, app.client_id);
    assert.ok(active.sub);
    assert.deepEqual(await (await call('/oauth/introspect', access_token, other)).json(), { active: false }, 'another client learns nothing');
    assert.deepEqual(await (await call('/oauth/introspect', 'garbage')).json(), { active: false });
    assert.equal((await call('/oauth/introspect', access_token, { client_id: app.client_id, client_secret: 'wrong' })).status, 401);
    assert.equal((await call('/oauth/revoke', access_token, other)).status, 200, 'same answer for a token of another client...');
    assert.equal(((await (await call('/oauth/introspect', access_token)).json()) as { active: boolean }).active, true, '...which stays active');
    assert.equal((await call('/oauth/revoke', access_token)).status, 200);
    assert.deepEqual(await (await call('/oauth/introspect', access_token)).json(), { active: false });
    assert.equal((await fetch(`${base}/userinfo`, { headers: { authorization: `Bearer ${access_token}` } })).status, 401);
  });

  it('refuses a code of another client, a wrong verifier, another redirect_uri, an expired code: nothing issued', async () => {
    const before = await tokens();
    const a = await codeFor();
    const r1 = await exchange(a.code, { verifier: a.verifier, clientId: other.client_id, secret: other.client_secret });
    assert.equal(((await r1.json()) as { error: string }).error, 'invalid_grant');
    const b = await codeFor();
    const r2 = await exchange(b.code, { verifier: `${b.verifier.slice(0, -1)}${b.verifier.endsWith('a') ? 'b' : 'a'}` });
    assert.equal(((await r2.json()) as { error: string }).error, 'invalid_grant');
    const c = await codeFor();
    const r3 = await exchange(c.code, { verifier: c.verifier, redirect: 'https://rp.example/other' });
    assert.equal(((await r3.json()) as { error: string }).error, 'invalid_grant');
    const d = await codeFor();
    await t.testDb.db.query(`UPDATE idp_codes SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`);
    const r4 = await exchange(d.code, { verifier: d.verifier });
    assert.equal(((await r4.json()) as { error: string }).error, 'invalid_grant');
    const r5 = await exchange(d.code, { verifier: d.verifier, secret: 'not-the-secret' });
    assert.equal(r5.status, 401);
    assert.equal(await tokens(), before);
  });

  it('signs up through the page (the same answer for an existing email), confirms by the mailed link and comes back with a code', async () => {
    const a = await authorize(app.client_id);
    const signupUrl = a.url.replace('/oauth/authorize?', '/oauth/authorize/signup?');
    const submit = async (fields: Record<string, string>) => {
      const page = await fetch(signupUrl, { redirect: 'manual' });
      const html = await page.text();
      assert.equal(page.status, 200, html);
      const form = new URLSearchParams();
      for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g)) form.set(m[1]!, m[2]!.replace(/&amp;/g, '&'));
      for (const [k, v] of Object.entries(fields)) form.set(k, v);
      return fetch(`${base}/oauth/authorize/signup`, { method: 'POST', redirect: 'manual', headers: { cookie: (page.headers.get('set-cookie') ?? '').split(';')[0]!, 'content-type': 'application/x-www-form-urlencoded' }, body: form });
    };
    const ok = await submit({ email: 'new.user@example.com', password: 'a brand new password', given_name: 'New' });
    const again = await submit({ email: 'ADA@example.com', password: 'another password 123' });
    const [okText, againText] = [await ok.text(), await again.text()];
    // The same page whether the address has an account or not: check your mail.
    for (const [res, text] of [[ok, okText], [again, againText]] as const) {
      assert.equal(res.status, 200, text);
      assert.match(text, /Check your mail/);
    }
    assert.equal(okText.replace(/new\.user@example\.com/, 'X'), againText.replace(/ADA@example\.com/, 'X'), 'the same page');
    assert.match((await smtp.next(email)).text, /already has one/, 'the owner of the account is told');
    const link = smtp.link(await smtp.next('new.user@example.com'), '/identity/v1/signup/confirm?token=');
    const confirmed = await fetch(`${base}/identity/v1/signup/confirm`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: link.searchParams.get('token')! }) });
    assert.equal(confirmed.status, 303);
    // Back to the authorization request, now signed in: the code comes to the client with its state.
    const resumed = await fetch(confirmed.headers.get('location')!, { redirect: 'manual', headers: { cookie: (confirmed.headers.get('set-cookie') ?? '').split(';')[0]! } });
    assert.equal(resumed.status, 303, await resumed.text());
    const back = new URL(resumed.headers.get('location')!);
    assert.ok(back.searchParams.get('code'));
    assert.equal(back.searchParams.get('state'), a.state);
    const short = await submit({ email: 'short@example.com', password: 'short' });
    assert.equal(short.status, 400);
    const { rows } = await t.testDb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM idp_users WHERE lower(email) IN ('new.user@example.com', 'short@example.com')`);
    assert.equal(rows[0]!.n, 1);
  });

  it('refuses a login form without its CSRF token, and throttles guessing with the same answer for unknown emails', async () => {
    const a = await authorize(app.client_id);
    const noCsrf = await signIn(a.url, { csrf: false });
    assert.equal(noCsrf.status, 403);
    assert.equal(noCsrf.headers.get('location'), null);
    const victim = 'nobody-or-somebody@example.com';
    const unknown = await signIn(a.url, { email: victim, password: 'wrong password 1' });
    const wrong = await signIn(a.url, { password: 'wrong password 1' });
    const msg = (html: string) => /role="alert">([^<]+)</.exec(html)?.[1];
    assert.equal(msg(await unknown.text()), msg(await wrong.text()), 'no hint whether the email exists');
    for (let i = 0; i < 4; i++) await signIn(a.url, { password: `wrong password ${i + 2}` });
    const throttled = await signIn(a.url);
    assert.equal(throttled.status, 429, 'even the right password waits');
    assert.equal(throttled.headers.get('location'), null);
  });
});
