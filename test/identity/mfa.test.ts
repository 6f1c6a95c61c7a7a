// The second factor (docs/identity.md "Second factor"): enrolment on the security page,
// the sign-in's second step before any session or code, replayed TOTP codes refused,
// recovery codes single use, 5 wrong codes then start over, the password grant refused
// and the SDK's tkn path asking the factor too. Codes are computed with otpauth.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as OTPAuth from 'otpauth';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { FORM, PASSWORD, alertOf, authorizeRequest, basic, cookieOf, createClient, createUser, exchange, hiddenFields, signIn } from './idp-helpers.ts';

const REDIRECT = 'https://shop.example/callback';

describe('identity provider: second factor (TOTP and recovery codes)', () => {
  let t: TestApp;
  let client: { client_id: string; client_secret: string };
  const email = 'mfa@example.com';
  let secret = '';
  let recovery: string[] = [];

  before(async () => {
    t = await createTestApp();
    await createUser(t, email, { email_verified: true });
    client = await createClient(t, { name: 'Shop', callback_urls: [REDIRECT], grant_types: ['authorization_code', 'password'] }); // (the password grant is opt-in)
  });
  after(() => t?.close());

  let confirmedAt = 0;
  const codeAt = (timestamp: number) => new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), period: 30, digits: 6 }).generate({ timestamp });
  const totpNow = (offsetSteps = 0) => new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), period: 30, digits: 6 })
    .generate({ timestamp: Date.now() + offsetSteps * 30_000 });

  /** Posts a form of the page `page` (its hidden fields, its CSRF cookie) to url. */
  const post = (page: { body: string; cookie: string }, url: string, fields: Record<string, string>) => {
    const form = hiddenFields(page.body);
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    return t.app.inject({ method: 'POST', url, headers: { ...FORM, cookie: page.cookie }, payload: form.toString() });
  };
  const cookiesOf = (...parts: Array<string | undefined>) => parts.filter(Boolean).join('; ');

  /** Password step of the hosted sign-in; returns the second-step page and its cookies. */
  async function passwordStep() {
    const a = authorizeRequest(client.client_id, REDIRECT);
    const page = await t.app.inject({ url: a.url });
    const csrf = cookieOf(page, 'payd_idp_csrf')!;
    const form = hiddenFields(page.body);
    form.set('email', email);
    form.set('password', PASSWORD);
    const res = await t.app.inject({ method: 'POST', url: '/oauth/authorize/login', headers: { ...FORM, cookie: csrf }, payload: form.toString() });
    return { res, a, cookie: cookiesOf(csrf, cookieOf(res, 'payd_idp_mfa')) };
  }

  it('enrols an authenticator on the security page: the password again, then a current code; recovery codes shown once', async () => {
    // A session through the account sign-in (no factor yet).
    const login = await t.app.inject({ url: '/oauth/account/security' });
    const csrf = cookieOf(login, 'payd_idp_csrf')!;
    const signed = await post({ body: login.body, cookie: csrf }, '/oauth/account/security/login', { email, password: PASSWORD });
    assert.equal(signed.statusCode, 303, signed.body);
    const session = cookieOf(signed, 'payd_idp_session')!;
    const cookie = cookiesOf(csrf, session);
    const page = await t.app.inject({ url: '/oauth/account/security', headers: { cookie } });
    assert.match(page.body, /Authenticator app: <strong>off<\/strong>/);

    const wrongPassword = await post({ body: page.body, cookie }, '/oauth/account/security/totp/start', { password: 'not the password' });
    assert.equal(wrongPassword.statusCode, 400);
    const noCsrf = await t.app.inject({ method: 'POST', url: '/oauth/account/security/totp/start', headers: { ...FORM, cookie: session }, payload: `password=${encodeURIComponent(PASSWORD)}` });
    assert.equal(noCsrf.statusCode, 403);

    const started = await post({ body: page.body, cookie }, '/oauth/account/security/totp/start', { password: PASSWORD });
    assert.equal(started.statusCode, 200, started.body);
    secret = /id="totp-secret">([A-Z2-7]+)</.exec(started.body)![1]!;
    assert.match(started.body, /otpauth:\/\/totp\//);
    // Not active before it is confirmed: the sign-in still completes with the password.
    assert.equal((await passwordStep()).res.statusCode, 303);
    const stored = await t.testDb.db.query<{ secret_enc: string }>('SELECT secret_enc FROM idp_mfa_totp');
    assert.ok(!stored.rows[0]!.secret_enc.includes(secret), 'the secret is stored encrypted');

    const wrong = await post({ body: started.body, cookie }, '/oauth/account/security/totp/confirm', { code: '000000' === totpNow() ? '111111' : '000000' });
    assert.equal(wrong.statusCode, 400);
    assert.match(alertOf(wrong.body)!, /^code: /);
    confirmedAt = Date.now();
    const confirmed = await post({ body: started.body, cookie }, '/oauth/account/security/totp/confirm', { code: codeAt(confirmedAt) });
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    recovery = [...confirmed.body.matchAll(/<li><code>([0-9a-f-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    assert.equal(recovery.length, 10);
    const hashes = await t.testDb.db.query<{ code_hash: string }>('SELECT code_hash FROM idp_mfa_recovery_codes');
    assert.equal(hashes.rows.length, 10);
    assert.ok(hashes.rows.every((r) => !recovery.some((c) => r.code_hash.includes(c.replace(/-/g, '')))), 'recovery codes are stored hashed');
    const again = await t.app.inject({ url: '/oauth/account/security', headers: { cookie } });
    assert.match(again.body, /Authenticator app: <strong>on<\/strong>/);
    assert.doesNotMatch(again.body, /recovery-codes/, 'the codes are shown once');
  });

  it('asks the second step after the password, before any session or code; a replayed code is refused', async () => {
    const { res, a, cookie } = await passwordStep();
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /action="\/oauth\/authorize\/mfa"/);
    assert.equal(cookieOf(res, 'payd_idp_session'), undefined, 'no session before the factor');
    assert.equal(res.headers.location, undefined);
    // The code that confirmed the enrolment cannot be used again (the very code of that step,
    // whether the clock has moved to the next step since or not).
    const replay = await post({ body: res.body, cookie }, '/oauth/authorize/mfa', { code: codeAt(confirmedAt) });
    assert.equal(replay.statusCode, 400, replay.body);
    assert.equal(cookieOf(replay, 'payd_idp_session'), undefined);
    const next = await post({ body: res.body, cookie }, '/oauth/authorize/mfa', { code: totpNow(1) });
    assert.equal(next.statusCode, 303, next.body);
    assert.ok(cookieOf(next, 'payd_idp_session'));
    const location = new URL(next.headers.location as string);
    assert.equal(location.searchParams.get('state'), a.state);
    const tokens = await exchange(t.app, client, location.searchParams.get('code')!, REDIRECT, a.verifier);
    assert.equal(tokens.statusCode, 200, tokens.body);
    // The pending sign-in is spent: the same cookie does not sign in twice.
    const twice = await post({ body: res.body, cookie }, '/oauth/authorize/mfa', { code: recovery[9]! });
    assert.match(alertOf(twice.body)!, /expired/);
  });

  it('accepts a recovery code once', async () => {
    const first = await passwordStep();
    const ok = await post({ body: first.res.body, cookie: first.cookie }, '/oauth/authorize/mfa', { code: recovery[0]!.toUpperCase() });
    assert.equal(ok.statusCode, 303, ok.body);
    const second = await passwordStep();
    const reused = await post({ body: second.res.body, cookie: second.cookie }, '/oauth/authorize/mfa', { code: recovery[0]! });
    assert.equal(reused.statusCode, 400);
    assert.equal(cookieOf(reused, 'payd_idp_session'), undefined);
  });

  it('allows 5 wrong codes per pending sign-in, then the sign-in starts over', async () => {
    const { res, cookie } = await passwordStep();
    for (let i = 1; i <= 4; i++) {
      const wrong = await post({ body: res.body, cookie }, '/oauth/authorize/mfa', { code: `${i}`.repeat(4) + '-0000-0000-0000' });
      assert.equal(wrong.statusCode, 400);
    }
    const fifth = await post({ body: res.body, cookie }, '/oauth/authorize/mfa', { code: 'ffff-ffff-ffff-ffff' });
    assert.equal(fifth.statusCode, 429);
    assert.match(alertOf(fifth.body)!, /Too many wrong codes/);
    const good = await post({ body: res.body, cookie }, '/oauth/authorize/mfa', { code: recovery[1]! });
    assert.equal(good.statusCode, 200);
    assert.equal(cookieOf(good, 'payd_idp_session'), undefined, 'a good code after the limit does not sign in');
    assert.match(alertOf(good.body)!, /expired/);
  });

  it('does not let the account sign-in skip the factor', async () => {
    const login = await t.app.inject({ url: '/oauth/account/applications' });
    const csrf = cookieOf(login, 'payd_idp_csrf')!;
    const res = await post({ body: login.body, cookie: csrf }, '/oauth/account/login', { email, password: PASSWORD });
    assert.equal(res.statusCode, 200);
    assert.equal(cookieOf(res, 'payd_idp_session'), undefined);
    assert.match(res.body, /action="\/oauth\/authorize\/mfa"/);
    const done = await post({ body: res.body, cookie: cookiesOf(csrf, cookieOf(res, 'payd_idp_mfa')) }, '/oauth/authorize/mfa', { code: recovery[2]! });
    assert.equal(done.statusCode, 303);
    assert.equal(done.headers.location, '/oauth/account/applications');
  });

  it('refuses the password grant for a user with a factor', async () => {
    const res = await t.app.inject({
      method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(client) },
      payload: new URLSearchParams({ grant_type: 'password', username: email, password: PASSWORD }).toString(),
    });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().error, 'invalid_grant');
    assert.match(res.json().error_description, /second factor/);
  });

  it('asks the factor on the SDK password login (tkn) before the session', async () => {
    const login = await t.app.inject({ method: 'POST', url: '/identity/v1/password/login', headers: { 'content-type': 'application/json' },
      payload: { client_id: client.client_id, email, password: PASSWORD } });
    assert.equal(login.statusCode, 200, login.body);
    const tkn = login.json().tkn as string;
    const a = authorizeRequest(client.client_id, REDIRECT, { tkn });
    const res = await t.app.inject({ url: a.url });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(cookieOf(res, 'payd_idp_session'), undefined);
    assert.match(res.body, /action="\/oauth\/authorize\/mfa"/);
  });

  it('the sign-in without a factor is unchanged (signIn helper)', async () => {
    await createUser(t, 'plain@example.com');
    const res = await signIn(t.app, authorizeRequest(client.client_id, REDIRECT).url, { email: 'plain@example.com', password: PASSWORD });
    assert.equal(res.statusCode, 303);
  });
});
