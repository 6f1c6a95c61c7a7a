// The identity SDK's wire contract (issue 22, docs/identity-sdk.md), request by request
// as @reachfive/identity-core sends them (JSON bodies in snake_case, the one-time tkn
// handed to /oauth/authorize, JSON token requests, web_message), and its errors as the
// SDK reads them ({error, error_description, error_user_msg}). The browser test with the
// real SDK is test/e2e/identity-sdk.e2e.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts';
import { waitFor } from '../helpers/wait.ts';
import { type Client, PASSWORD, cookieOf, count, createClient, createUser } from './idp-helpers.ts';

const SHOP = 'https://shop.example';
const CALLBACK = `${SHOP}/callback`;
const LINKING = 'https://messenger.example/account_linking';
const JSON_HEADERS = { 'content-type': 'application/json;charset=UTF-8', origin: SHOP };

describe('identity SDK API (/identity/v1)', () => {
  let t: TestApp;
  let confidential: Client;
  let spa: Client;
  let firstParty: Client;
  let thirdParty: Client;
  let messenger: Client;
  let smtp: SmtpSink;
  before(async () => {
    // Identity mails go to a real SMTP server: the only place their links can be read.
    smtp = await startSmtpSink();
    t = await createTestApp({ smtpUrl: smtp.url });
    // (client_secret_post: its server sends the secret in the body, as the JSON exchange below does.)
    confidential = await createClient(t, { name: 'Shop', callback_urls: [CALLBACK], allowed_origins: [SHOP], response_types: ['code', 'messenger_code'], token_endpoint_auth_method: 'client_secret_post' });
    spa = await createClient(t, { name: 'Shop SPA', callback_urls: [CALLBACK], allowed_origins: [SHOP], token_endpoint_auth_method: 'none' });
    // The password grant is opt-in (grant_types with password) and never for public clients.
    firstParty = await createClient(t, { name: 'Own app', callback_urls: [CALLBACK], first_party: true, token_endpoint_auth_method: 'client_secret_post', grant_types: ['authorization_code', 'password'] });
    thirdParty = await createClient(t, { name: 'Partner app', callback_urls: [CALLBACK], first_party: false, token_endpoint_auth_method: 'none' });
    messenger = await createClient(t, { name: 'Bot', callback_urls: [LINKING], response_types: ['messenger_code'] });
    await createUser(t, 'ada@example.com');
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  const post = (url: string, payload: object, headers: Record<string, string> = {}, ip?: string) =>
    t.app.inject({ method: 'POST', url, headers: { ...JSON_HEADERS, ...headers }, payload: JSON.stringify(payload), ...(ip ? { remoteAddress: ip } : {}) });
  const sdkError = (res: LightMyRequestResponse) => {
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const body = res.json();
    assert.equal(typeof body.error, 'string');
    assert.equal(typeof body.error_description, 'string');
    return body as { error: string; error_description: string; error_user_msg?: string; error_details?: { field: string }[] };
  };
  const login = (clientId: string, email = 'ada@example.com', password = PASSWORD, ip = '10.1.0.1') =>
    post('/identity/v1/password/login', { client_id: clientId, scope: 'openid profile email phone', email, password }, {}, ip);
  /** The SDK's loginCallback: /oauth/authorize with the tkn (and what the application passed in auth). */
  const authorizeWithTkn = (clientId: string, tkn: string, extra: Record<string, string> = {}) => t.app.inject({
    url: `/oauth/authorize?${new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: CALLBACK, scope: 'openid profile email phone', display: 'page', tkn, ...extra })}`,
  });

  it('GET /identity/v1/config: the remote settings the SDK starts with; an unknown client is invalid_client', async () => {
    const res = await t.app.inject({ url: `/identity/v1/config?client_id=${confidential.client_id}&lang=fr`, headers: { origin: SHOP } });
    assert.equal(res.statusCode, 200, res.body);
    const c = res.json();
    assert.equal(c.sso, true);
    assert.equal(c.is_public, false);
    assert.equal(c.pkce_enforced, false);
    assert.equal(c.language, 'fr');
    assert.equal(c.password_policy.min_length, 12);
    assert.deepEqual(c.login_type_allowed, { password: true, passwordless: false, social_login: false, web_authn: false });
    assert.equal(res.headers['access-control-allow-origin'], SHOP);
    assert.equal(res.headers['access-control-allow-credentials'], 'true');
    const pub = (await t.app.inject({ url: `/identity/v1/config?client_id=${spa.client_id}` })).json();
    assert.equal(pub.is_public, true, 'a public client: the SDK adds PKCE');
    const unknown = await t.app.inject({ url: '/identity/v1/config?client_id=nope' });
    assert.equal(unknown.statusCode, 400);
    assert.equal(sdkError(unknown).error, 'invalid_client');
  });

  it('CORS: preflight and answers for Allowed Origins only, with credentials', async () => {
    const pre = await t.app.inject({ method: 'OPTIONS', url: '/identity/v1/password/login', headers: { origin: SHOP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-r5-correlation-id' } });
    assert.equal(pre.statusCode, 204);
    assert.equal(pre.headers['access-control-allow-origin'], SHOP);
    assert.equal(pre.headers['access-control-allow-credentials'], 'true');
    assert.match(String(pre.headers['access-control-allow-headers']), /X-R5-Correlation-Id/);
    const other = await t.app.inject({ method: 'OPTIONS', url: '/identity/v1/password/login', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    assert.equal(other.statusCode, 403);
    assert.equal(other.headers['access-control-allow-origin'], undefined);
    const answer = await login(confidential.client_id, 'ada@example.com', 'wrong password here', '10.1.9.9');
    assert.equal(answer.headers['access-control-allow-origin'], SHOP);
    const evil = await t.app.inject({ method: 'POST', url: '/identity/v1/password/strength', headers: { 'content-type': 'application/json', origin: 'https://evil.example' }, payload: '{"password":"x"}' });
    assert.equal(evil.headers['access-control-allow-origin'], undefined);
  });

  it('password login: a one-time tkn; /oauth/authorize with it starts the session and redirects with a code, once', async () => {
    const res = await login(confidential.client_id);
    assert.equal(res.statusCode, 200, res.body);
    const { tkn, mfa_required } = res.json();
    assert.match(tkn, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(mfa_required, false);
    const state = 'st-1';
    const a = await authorizeWithTkn(confidential.client_id, tkn, { state });
    assert.equal(a.statusCode, 303, a.body);
    const to = new URL(String(a.headers.location));
    assert.equal(`${to.origin}${to.pathname}`, CALLBACK);
    assert.ok(to.searchParams.get('code'));
    assert.equal(to.searchParams.get('state'), state);
    const cookies = ([] as string[]).concat(a.headers['set-cookie'] ?? []).filter((c) => c.startsWith('payd_idp_session='));
    assert.deepEqual(cookies.map((c) => /Path=([^;]+)/.exec(c)?.[1]).sort(), ['/identity', '/oauth'], 'the session is read by /oauth and /identity');
    // The code is exchanged as the spec says (form) or as the SDK does (JSON).
    const token = await t.app.inject({
      method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ grant_type: 'authorization_code', client_id: confidential.client_id, client_secret: confidential.client_secret, code: to.searchParams.get('code'), redirect_uri: CALLBACK }),
    });
    assert.equal(token.statusCode, 200, token.body);
    assert.ok(token.json().id_token);
    const event = await t.testDb.db.query<{ auth_type: string }>(`SELECT auth_type FROM idp_user_events e JOIN idp_users u ON u.id = e.user_id WHERE u.email = 'ada@example.com' ORDER BY date DESC LIMIT 1`);
    assert.equal(event.rows[0]!.auth_type, 'password');

    const again = await authorizeWithTkn(confidential.client_id, tkn, { state });
    assert.equal(again.statusCode, 303);
    assert.equal(new URL(String(again.headers.location)).searchParams.get('error'), 'access_denied', 'a tkn is used once');
    const other = await login(confidential.client_id);
    const foreign = await authorizeWithTkn(spa.client_id, other.json().tkn, { state, code_challenge: createHash('sha256').update('v'.repeat(43)).digest('base64url'), code_challenge_method: 'S256' });
    assert.equal(new URL(String(foreign.headers.location)).searchParams.get('error'), 'access_denied', 'a tkn of another application');
    await t.testDb.db.query(`UPDATE idp_login_tokens SET expires_at = now() - interval '1 second'`);
    const late = await authorizeWithTkn(confidential.client_id, other.json().tkn, { state });
    assert.equal(new URL(String(late.headers.location)).searchParams.get('error'), 'access_denied', 'an expired tkn');
  });

  it('a confidential client without state or PKCE is refused (login CSRF), as on the hosted page', async () => {
    const { tkn } = (await login(confidential.client_id)).json();
    const res = await authorizeWithTkn(confidential.client_id, tkn);
    assert.equal(res.statusCode, 303);
    assert.equal(new URL(String(res.headers.location)).searchParams.get('error'), 'invalid_request');
  });

  it('messenger_code: the tkn signs in and the messenger gets its authorization_code', async () => {
    const { tkn } = (await login(messenger.client_id)).json();
    const url = `${LINKING}?account_linking_token=alt-1`;
    const res = await t.app.inject({ url: `/oauth/authorize?${new URLSearchParams({ client_id: messenger.client_id, response_type: 'messenger_code', redirect_uri: url, account_linking_token: 'alt-1', tkn })}` });
    assert.equal(res.statusCode, 303, res.body);
    const to = new URL(String(res.headers.location));
    assert.equal(to.searchParams.get('account_linking_token'), 'alt-1');
    assert.ok(to.searchParams.get('authorization_code'));
  });

  it('login errors as the SDK surfaces them: wrong password and unknown email alike, then the throttle (429)', async () => {
    const wrong = await login(confidential.client_id, 'ada@example.com', 'not the password at all', '10.2.0.1');
    assert.equal(wrong.statusCode, 400);
    const w = sdkError(wrong);
    assert.equal(w.error, 'invalid_grant');
    assert.equal(w.error_user_msg, 'Invalid email or password.');
    const unknown = await login(confidential.client_id, 'nobody@example.com', 'not the password at all', '10.2.0.1');
    assert.deepEqual(sdkError(unknown).error_description, w.error_description, 'no account enumeration');
    let last: LightMyRequestResponse | undefined;
    for (let i = 0; i < 6; i++) last = await login(confidential.client_id, 'ada@example.com', 'not the password at all', '10.2.0.2');
    assert.equal(last!.statusCode, 429);
    assert.equal(sdkError(last!).error, 'too_many_attempts');
    assert.equal(last!.headers['retry-after'], '1', 'the real wait');
    assert.equal((await login(confidential.client_id, 'ada@example.com', PASSWORD, '10.2.0.3')).statusCode, 200, 'another address still signs in');
  });

  it('sign-up: the password rules with error_details; the same answer whether the address has an account; the mailed link creates it, once', async () => {
    const signup = (email: string, password: string, ip = '10.3.0.1', extra: object = {}) =>
      post('/identity/v1/signup', { client_id: confidential.client_id, scope: 'openid profile email', data: { email, password, given_name: 'Grace', family_name: 'Hopper' }, ...extra }, {}, ip);
    const weak = await signup('grace@example.com', 'password1234');
    assert.equal(weak.statusCode, 400);
    assert.equal(sdkError(weak).error_details?.[0]?.field, 'data.password');
    assert.equal((await signup('not-an-email', 'a sturdy passphrase 42')).statusCode, 400);
    // A new address and one that has an account (ada): one answer, byte for byte.
    const fresh = await signup('grace@example.com', 'a sturdy passphrase 42', '10.3.0.1', { return_to_after_email_confirmation: `${SHOP}/welcome` });
    const taken = await signup('ADA@example.com', 'a sturdy passphrase 42');
    for (const res of [fresh, taken]) {
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), {}, 'no tkn: the SDK resolves with {}');
    }
    assert.equal(fresh.body, taken.body);
    assert.equal(await count(t, `SELECT count(*)::int AS n FROM idp_users WHERE email = 'grace@example.com'`), 0, 'no account before the address is confirmed');
    // The owner of the existing account is told, with no link.
    const notice = await smtp.next('ada@example.com');
    assert.match(notice.text, /already has one/);
    assert.doesNotMatch(notice.text, /token=/);
    // The new address gets the link: GET shows a form (a mail scanner uses nothing), POST creates and signs in.
    const link = smtp.link(await smtp.next('grace@example.com'), '/identity/v1/signup/confirm?token=');
    assert.equal((await t.app.inject({ url: `${link.pathname}${link.search}` })).statusCode, 200);
    assert.equal(await count(t, `SELECT count(*)::int AS n FROM idp_users WHERE email = 'grace@example.com'`), 0);
    const confirm = () => t.app.inject({ method: 'POST', url: '/identity/v1/signup/confirm', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ token: link.searchParams.get('token')! }).toString() });
    const done = await confirm();
    assert.equal(done.statusCode, 303, done.body);
    assert.equal(done.headers.location, `${SHOP}/welcome`);
    const session = cookieOf(done, 'payd_idp_session')!;
    assert.equal((await t.app.inject({ url: `/identity/v1/sso/data?client_id=${confidential.client_id}`, headers: { cookie: session } })).json().email, 'grace@example.com');
    assert.equal((await confirm()).statusCode, 400, 'the link works once');
    assert.equal((await login(confidential.client_id, 'grace@example.com', 'a sturdy passphrase 42', '10.3.0.2')).statusCode, 200, 'the chosen password signs in');
    const kept = (await t.testDb.db.query<{ body: string }>(`SELECT body FROM idp_mail_outbox WHERE to_address = 'grace@example.com'`)).rows[0]!.body;
    assert.doesNotMatch(kept, new RegExp(link.searchParams.get('token')!), 'the outbox keeps the link redacted');
    let last: LightMyRequestResponse | undefined;
    for (let i = 0; i < 11; i++) last = await signup(`mass${i}@example.com`, 'a sturdy passphrase 42', '10.3.0.9');
    assert.equal(last!.statusCode, 429, 'sign-ups are throttled per address as on the hosted page');
  });

  it('password strength: a score from 0 to 4', async () => {
    const score = async (password: string) => (await post('/identity/v1/password/strength', { client_id: confidential.client_id, password })).json().score;
    assert.ok((await score('password')) <= 1);
    assert.equal(await score('Correct horse battery staple'), 4);
  });

  it('userinfo with the access token, sso/data with the session cookie, and the password grant for first-party applications only', async () => {
    const grant = (c: Client, password = PASSWORD) => t.app.inject({
      method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ grant_type: 'password', client_id: c.client_id, ...(c.client_secret ? { client_secret: c.client_secret } : {}), username: 'ada@example.com', password, scope: 'openid profile email phone' }),
    });
    const refused = await grant(thirdParty);
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().error, 'unauthorized_client');
    assert.equal((await grant(firstParty, 'wrong password again')).json().error, 'invalid_grant');
    const tokens = await grant(firstParty);
    assert.equal(tokens.statusCode, 200, tokens.body);
    const me = await t.app.inject({ url: '/identity/v1/userinfo', headers: { authorization: `Bearer ${tokens.json().access_token}`, origin: SHOP } });
    assert.equal(me.statusCode, 200, me.body);
    assert.equal(me.json().email, 'ada@example.com');
    assert.equal(me.json().name, 'Test User');
    assert.ok(me.json().id);
    assert.equal((await t.app.inject({ url: '/identity/v1/userinfo' })).statusCode, 401);
    // The SDK's logout of a public client revokes its tokens first: JSON, cross-origin.
    const revoked = await post('/oauth/revoke', { client_id: firstParty.client_id, client_secret: firstParty.client_secret, token: tokens.json().access_token });
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.deepEqual(revoked.json(), {}, 'a JSON body the SDK can read with response.json()');
    assert.equal((await t.app.inject({ url: '/identity/v1/userinfo', headers: { authorization: `Bearer ${tokens.json().access_token}` } })).statusCode, 401, 'revoked');

    const { tkn } = (await login(confidential.client_id)).json();
    const a = await authorizeWithTkn(confidential.client_id, tkn, { state: 's' });
    const session = cookieOf(a, 'payd_idp_session')!;
    const data = await t.app.inject({ url: `/identity/v1/sso/data?client_id=${confidential.client_id}`, headers: { cookie: session, origin: SHOP } });
    assert.deepEqual({ ...(data.json() as object), name: undefined }, { is_authenticated: true, email: 'ada@example.com', name: undefined, last_login_type: 'password', has_password: true, social_providers: [] });
    assert.deepEqual((await t.app.inject({ url: `/identity/v1/sso/data?client_id=${confidential.client_id}` })).json(), { is_authenticated: false });
  });

  it('logout: from an Allowed Origin at once (to an allowed redirect_to only); a link from elsewhere asks first', async () => {
    const signedIn = async () => cookieOf(await authorizeWithTkn(confidential.client_id, (await login(confidential.client_id)).json().tkn, { state: 's' }), 'payd_idp_session')!;
    const alive = async (cookie: string) => (await t.app.inject({ url: `/identity/v1/sso/data?client_id=${confidential.client_id}`, headers: { cookie } })).json().is_authenticated;

    const s1 = await signedIn();
    const cross = await t.app.inject({ url: `/identity/v1/logout?redirect_to=${encodeURIComponent(CALLBACK)}`, headers: { cookie: s1, referer: 'https://evil.example/page', 'sec-fetch-site': 'cross-site' } });
    assert.equal(cross.statusCode, 200);
    assert.match(cross.body, /<form/, 'a confirmation');
    assert.equal(await alive(s1), true, 'still signed in');

    const fromShop = await t.app.inject({ url: `/identity/v1/logout?redirect_to=${encodeURIComponent(`${SHOP}/bye`)}`, headers: { cookie: s1, referer: `${SHOP}/account`, 'sec-fetch-site': 'cross-site' } });
    assert.equal(fromShop.statusCode, 302);
    assert.equal(fromShop.headers.location, `${SHOP}/bye`);
    assert.equal(await alive(s1), false);

    const s2 = await signedIn();
    const open = await t.app.inject({ url: `/identity/v1/logout?redirect_to=${encodeURIComponent('https://evil.example/')}`, headers: { cookie: s2, referer: `${SHOP}/account` } });
    assert.equal(open.statusCode, 200, 'no open redirect');
    assert.equal(await alive(s2), false);
  });

  it('forgot password: the same answer for any address, a mail (the outbox keeps it redacted), a reset that ends every session, once', async () => {
    await createUser(t, 'reset@example.com');
    const ask = (email: string) => post('/identity/v1/forgot-password', { client_id: confidential.client_id, email, return_to: `${SHOP}/signed-out` });
    const mails = () => count(t, `SELECT count(*)::int AS n FROM idp_mail_outbox WHERE to_address = 'reset@example.com'`);
    assert.equal((await ask('nobody@example.com')).statusCode, 204);
    assert.equal(await count(t, `SELECT count(*)::int AS n FROM idp_mail_outbox WHERE to_address = 'nobody@example.com'`), 0);
    const session = cookieOf(await authorizeWithTkn(confidential.client_id, (await login(confidential.client_id, 'reset@example.com')).json().tkn, { state: 's' }), 'payd_idp_session')!;
    assert.equal((await ask('reset@example.com')).statusCode, 204);
    assert.equal(await mails(), 1);
    const link = smtp.link(await smtp.next('reset@example.com'), '/password/reset?token=');
    const token = link.searchParams.get('token')!;
    const kept = (await t.testDb.db.query<{ body: string }>(`SELECT body FROM idp_mail_outbox WHERE to_address = 'reset@example.com'`)).rows[0]!.body;
    assert.match(kept, /password\/reset\?token=\[redacted\]/, 'the outbox keeps the link redacted');
    assert.doesNotMatch(kept, new RegExp(token));
    const page = await t.app.inject({ url: `${link.pathname}${link.search}` });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /Choose a new password/);
    const reset = (password: string) => t.app.inject({ method: 'POST', url: '/identity/v1/password/reset', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ token, password }).toString() });
    assert.equal((await reset('password1234')).statusCode, 400, 'the password rules');
    const done = await reset('a new and sturdy passphrase');
    assert.equal(done.statusCode, 200, done.body);
    assert.match(done.body, new RegExp(`href="${SHOP}/signed-out"`));
    assert.equal((await t.app.inject({ url: `/identity/v1/sso/data?client_id=${confidential.client_id}`, headers: { cookie: session } })).json().is_authenticated, false, 'sessions ended');
    assert.equal((await login(confidential.client_id, 'reset@example.com', PASSWORD, '10.4.0.1')).statusCode, 400, 'the old password is gone');
    assert.equal((await login(confidential.client_id, 'reset@example.com', 'a new and sturdy passphrase', '10.4.0.1')).statusCode, 200);
    assert.equal((await reset('yet another sturdy passphrase')).statusCode, 400, 'a link works once');
    for (let i = 0; i < 4; i++) await ask('reset@example.com');
    assert.equal(await mails(), 3, 'at most 3 links an hour');
  });

  it('response_mode=web_message (checkSession): the code or login_required posted to the redirect URI\'s origin only', async () => {
    const verifier = randomBytes(32).toString('base64url');
    const q = (extra: Record<string, string> = {}) => `/oauth/authorize?${new URLSearchParams({
      client_id: spa.client_id, response_type: 'code', redirect_uri: CALLBACK, scope: 'openid profile email phone', response_mode: 'web_message', prompt: 'none',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256', ...extra,
    })}`;
    const message = (res: LightMyRequestResponse) => JSON.parse(/<script type="application\/json" id="payd-web-message">(.*?)<\/script>/s.exec(res.body)![1]!);
    const none = await t.app.inject({ url: q() });
    assert.equal(none.statusCode, 200);
    assert.deepEqual(message(none), { origins: [SHOP], message: { type: 'authorization_response', response: { error: 'login_required', error_description: 'The user is not signed in (prompt=none).' } } });
    assert.match(String(none.headers['content-security-policy']), new RegExp(`frame-ancestors ${SHOP};.*script-src 'self'|script-src 'self'.*frame-ancestors ${SHOP}`));
    assert.equal(none.headers['x-frame-options'], undefined, 'framed by the relying party');

    const { tkn } = (await login(spa.client_id)).json();
    const session = cookieOf(await authorizeWithTkn(spa.client_id, tkn, { code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' }), 'payd_idp_session')!;
    const ok = await t.app.inject({ url: q(), headers: { cookie: session } });
    const m = message(ok);
    assert.deepEqual(m.origins, [SHOP]);
    assert.ok(m.message.response.code);
    const token = await t.app.inject({
      method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json', origin: SHOP },
      payload: JSON.stringify({ client_id: spa.client_id, grant_type: 'authorization_code', code_verifier: verifier, code: m.message.response.code, redirect_uri: CALLBACK }),
    });
    assert.equal(token.statusCode, 200, token.body);
    assert.equal(token.headers['access-control-allow-credentials'], 'true');
    const script = await t.app.inject({ url: '/identity/v1/web-message.js' });
    assert.match(script.body, /postMessage\(data\.message, data\.origins\[i\]\)/);
  });

  it('web_message for a confidential application (the SDK asks response_type=token, no redirect_uri): unsupported_response_type, posted to its registered origins only', async () => {
    const res = await t.app.inject({ url: `/oauth/authorize?${new URLSearchParams({ client_id: confidential.client_id, response_type: 'token', scope: 'openid', response_mode: 'web_message', prompt: 'none', state: 's' })}` });
    assert.equal(res.statusCode, 200, res.body);
    const data = JSON.parse(/<script type="application\/json" id="payd-web-message">(.*?)<\/script>/s.exec(res.body)![1]!);
    assert.equal(data.message.response.error, 'unsupported_response_type');
    assert.ok(data.origins.length > 0 && !data.origins.includes('*'));
    for (const o of data.origins) assert.match(String(res.headers['content-security-policy']), new RegExp(`frame-ancestors [^;]*${o.replace(/[.]/g, '\\.')}`));
    // An unknown application still gets the error page (no origin to post to).
    const unknown = await t.app.inject({ url: `/oauth/authorize?${new URLSearchParams({ client_id: 'nobody', response_type: 'token', response_mode: 'web_message' })}` });
    assert.doesNotMatch(unknown.body, /payd-web-message/);
  });
});

describe('identity mails over SMTP (PAYD_SMTP_URL)', () => {
  it('sends the reset mail through the SMTP server and records it; a server that is down leaves the mail in the outbox with its error, same answer', async () => {
    const { SMTPServer } = await import('smtp-server');
    const received: string[] = [];
    const server = new SMTPServer({
      authOptional: true, disabledCommands: ['STARTTLS'], logger: false,
      onData(stream, _session, done) {
        let text = '';
        stream.on('data', (c: Buffer) => { text += c.toString(); }).on('end', () => { received.push(text); done(); });
      },
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.server.address() as { port: number }).port;
    const t = await createTestApp({ smtpUrl: `smtp://127.0.0.1:${port}`, mailFrom: 'Shop accounts <accounts@shop.example>' });
    try {
      const app = await createClient(t, { name: 'Shop', callback_urls: [CALLBACK], allowed_origins: [SHOP] });
      await createUser(t, 'mail@example.com');
      const ask = () => t.app.inject({ method: 'POST', url: '/identity/v1/forgot-password', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ client_id: app.client_id, email: 'mail@example.com' }) });
      assert.equal((await ask()).statusCode, 204);
      const row = () => waitFor(async () => {
        const r = (await t.testDb.db.query<{ sent_at: Date | null; error: string | null; transport: string }>(`SELECT sent_at, error, transport FROM idp_mail_outbox ORDER BY created_at DESC LIMIT 1`)).rows[0]!;
        return r.sent_at || r.error ? r : undefined;
      }, { timeout: 5000, what: 'the mail to be sent or to fail' });
      const sent = await row();
      assert.equal(sent.transport, 'smtp');
      assert.ok(sent.sent_at, JSON.stringify(sent));
      assert.equal(received.length, 1);
      assert.match(received[0]!, /From: Shop accounts <accounts@shop\.example>/);
      assert.match(received[0]!.replace(/=\r\n/g, ''), /password\/reset\?token=/);

      await new Promise<void>((r) => server.close(() => r()));
      assert.equal((await ask()).statusCode, 204, 'the same answer when the mail cannot go out');
      const failed = await row();
      assert.ok(failed.error, 'the error is kept for the console');
      assert.equal(failed.sent_at, null);
    } finally {
      await t.close();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
