// A second factor that can be required (issue 40; docs/identity.md "Second factor"): each
// sign-in records how it was made (amr, RFC 8176) and the id_token carries it; a merchant's
// admin requires a second factor for the team (only from a sign-in that had one, audited),
// then a member signed in with a password only sees nothing of that merchant, while other
// merchants are unaffected; PAYD_CONSOLE_REQUIRE_MFA does the same for the console; and the
// last factor cannot be removed while something requires it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as OTPAuth from 'otpauth';
import { decodeJwt } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';
import { FORM, PASSWORD, type Client, authorizeRequest, cookieOf, createClient, createUser, exchange, hiddenFields } from './idp-helpers.ts';

const REDIRECT = 'https://shop.example/callback';

describe('identity provider: a second factor required by a merchant team and by the console', () => {
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  let client: Client;
  const secrets = new Map<string, string>();
  const clock = new TestClock();

  before(async () => {
    t = await createTestApp({ baseUrl: 'https://payd.test', consoleRequireSecondFactor: true }, { clock: clock.now });
    a = await t.createMerchant('Strict shop');
    b = await t.createMerchant('Relaxed shop');
    for (const email of ['ada@strict.example', 'olga@strict.example']) await createUser(t, email, { email_verified: true });
    await createUser(t, 'root@strict.example', { is_admin: true, email_verified: true });
    for (const [entity, email, role] of [[a, 'ada@strict.example', 'admin'], [a, 'olga@strict.example', 'operator'], [b, 'olga@strict.example', 'viewer']] as const) {
      const res = await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${entity.entityId}/members`, headers: t.adminHeaders, payload: { email, role } });
      assert.equal(res.statusCode, 201, res.body);
    }
    client = await createClient(t, { name: 'Shop', callback_urls: [REDIRECT] });
  });
  after(() => t?.close());

  const jar = (...parts: Array<string | undefined>) => parts.filter(Boolean).join('; ');
  /** A current code of the user's authenticator: the app's clock moves on a step first (a code is accepted once). */
  const code = (email: string) => {
    clock.advance(30_000);
    return new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secrets.get(email)!), period: 30, digits: 6 }).generate({ timestamp: clock.now() });
  };
  const postForm = (url: string, cookie: string, html: string, fields: Record<string, string>) => {
    const form = hiddenFields(html);
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    return t.app.inject({ method: 'POST', url, headers: { ...FORM, cookie }, payload: form.toString() });
  };

  /** The account security page, signed in (with the factor when the user has one): its cookies and page. */
  async function securityPage(email: string) {
    const login = await t.app.inject({ url: '/oauth/account/security' });
    const csrf = cookieOf(login, 'payd_idp_csrf')!;
    let res = await postForm('/oauth/account/security/login', csrf, login.body, { email, password: PASSWORD });
    if (res.statusCode === 200 && secrets.has(email)) {
      res = await postForm('/oauth/authorize/mfa', jar(csrf, cookieOf(res, 'payd_idp_mfa')), res.body, { code: code(email) });
    }
    assert.equal(res.statusCode, 303, res.body);
    const cookie = jar(csrf, cookieOf(res, 'payd_idp_session'));
    const page = await t.app.inject({ url: '/oauth/account/security', headers: { cookie } });
    assert.equal(page.statusCode, 200, page.body);
    return { cookie, page };
  }

  async function enrol(email: string) {
    const { cookie, page } = await securityPage(email);
    const started = await postForm('/oauth/account/security/totp/start', cookie, page.body, { password: PASSWORD });
    assert.equal(started.statusCode, 200, started.body);
    secrets.set(email, /id="totp-secret">([A-Z2-7]+)</.exec(started.body)![1]!);
    const confirmed = await postForm('/oauth/account/security/totp/confirm', cookie, started.body, { code: code(email) });
    assert.equal(confirmed.statusCode, 200, confirmed.body);
  }

  /** The hosted sign-in of an authorization request (password, then the code when the user has a factor): the redirect back. */
  async function hostedSignIn(url: string, email: string): Promise<LightMyRequestResponse> {
    const page = await t.app.inject({ url });
    const csrf = cookieOf(page, 'payd_idp_csrf')!;
    let res = await postForm('/oauth/authorize/login', csrf, page.body, { email, password: PASSWORD });
    if (res.statusCode === 200 && secrets.has(email)) {
      assert.match(res.body, /Second step/);
      res = await postForm('/oauth/authorize/mfa', jar(csrf, cookieOf(res, 'payd_idp_mfa')), res.body, { code: code(email) });
    }
    assert.equal(res.statusCode, 303, res.body);
    return res;
  }

  /** Signs in to the dashboard or the console as a browser does: its cookie. */
  async function signInTo(path: '/dashboard' | '/console', email: string): Promise<string> {
    const start = await t.app.inject({ url: path });
    assert.equal(start.statusCode, 303, start.body);
    const login = cookieOf(start, path === '/dashboard' ? 'payd_dashboard_login' : 'payd_console_login')!;
    const authorize = new URL(String(start.headers.location));
    const back = new URL(String((await hostedSignIn(`${authorize.pathname}${authorize.search}`, email)).headers.location));
    const cb = await t.app.inject({ url: `${back.pathname}${back.search}`, headers: { cookie: login } });
    assert.equal(cb.statusCode, 303, cb.body);
    return cookieOf(cb, path === '/dashboard' ? 'payd_dashboard' : 'payd_console')!;
  }

  const idTokenOf = async (email: string) => {
    const req = authorizeRequest(client.client_id, REDIRECT, { scope: 'openid email offline_access' });
    const back = new URL(String((await hostedSignIn(req.url, email)).headers.location));
    const tokens = await exchange(t.app, client, back.searchParams.get('code')!, REDIRECT, req.verifier);
    assert.equal(tokens.statusCode, 200, tokens.body);
    return tokens.json() as { id_token: string; refresh_token?: string };
  };

  it('the id_token says how the user signed in (amr): a password, then a password and a one-time code; a refresh keeps it', async () => {
    assert.deepEqual(decodeJwt((await idTokenOf('ada@strict.example')).id_token).amr, ['pwd']);
    await enrol('ada@strict.example');
    const withFactor = await idTokenOf('ada@strict.example');
    assert.deepEqual(decodeJwt(withFactor.id_token).amr, ['pwd', 'otp', 'mfa']);
    const adaId = (await t.testDb.db.query<{ id: string }>(`SELECT id::text FROM idp_users WHERE email = 'ada@strict.example'`)).rows[0]!.id;
    const events = await t.app.inject({ url: `/admin/v1/identity/users/${adaId}/events`, headers: t.adminHeaders });
    assert.deepEqual(events.json()[0].amr, ['pwd', 'otp', 'mfa'], 'the login event says it too');
    assert.deepEqual(events.json()[1].amr, ['pwd']);
    if (withFactor.refresh_token) {
      const refreshed = await t.app.inject({
        method: 'POST', url: '/oauth/token', headers: { ...FORM, authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` },
        payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: withFactor.refresh_token }).toString(),
      });
      assert.equal(refreshed.statusCode, 200, refreshed.body);
      assert.deepEqual(decodeJwt(refreshed.json().id_token).amr, ['pwd', 'otp', 'mfa']);
    }
  });

  it('a merchant admin requires a second factor for the team: only from a sign-in with one; members without one see nothing of it', async () => {
    const olga = await signInTo('/dashboard', 'olga@strict.example'); // signed in before the team's change
    assert.equal((await t.app.inject({ url: `/dashboard/${a.entityId}`, headers: { cookie: olga } })).statusCode, 200);

    // Ada signed in with her factor (a password-only sign-in cannot turn it on: the next test).
    const ada = await signInTo('/dashboard', 'ada@strict.example');
    const team = await t.app.inject({ url: `/dashboard/${a.entityId}/team`, headers: { cookie: ada } });
    assert.equal(team.statusCode, 200, team.body);
    assert.match(team.body, /ada@strict\.example \(you\)<\/td><td>[^<]*<\/td>\s*<td>On<\/td>/);
    assert.match(team.body, /olga@strict\.example<\/td><td>[^<]*<\/td>\s*<td><strong>Off<\/strong><\/td>/);
    const csrf = hiddenFields(team.body).get('csrf')!;
    const on = await t.app.inject({ method: 'POST', url: `/dashboard/${a.entityId}/team/security`, headers: { ...FORM, cookie: ada }, payload: `csrf=${encodeURIComponent(csrf)}&require_second_factor=on` });
    assert.equal(on.statusCode, 303, on.body);
    const audit = await t.testDb.db.query<{ action: string }>('SELECT action FROM dashboard_actions WHERE entity_id = $1 ORDER BY created_at DESC LIMIT 1', [a.entityId]);
    assert.equal(audit.rows[0]?.action, 'Require a second factor for the team');

    // Olga's password-only sign-in: nothing of the strict shop (pages and actions), the relaxed shop as before.
    for (const url of [`/dashboard/${a.entityId}`, `/dashboard/${a.entityId}/payments`]) {
      const res = await t.app.inject({ url, headers: { cookie: olga } });
      assert.equal(res.statusCode, 403, url);
      assert.match(res.body, /Strict shop requires its team to sign in with a second factor/);
      assert.match(res.body, /https:\/\/payd\.test\/oauth\/account\/security/);
    }
    assert.equal((await t.app.inject({ url: `/dashboard/${b.entityId}`, headers: { cookie: olga } })).statusCode, 200);
    // Once she has a factor and signs in again, she is in.
    await enrol('olga@strict.example');
    const olgaAgain = await signInTo('/dashboard', 'olga@strict.example');
    assert.equal((await t.app.inject({ url: `/dashboard/${a.entityId}`, headers: { cookie: olgaAgain } })).statusCode, 200);

    // While the team requires it, the last factor stays; once it does not, it can go.
    const remove = async (email: string) => {
      const { cookie, page } = await securityPage(email);
      return postForm('/oauth/account/security/totp/remove', cookie, page.body, { password: PASSWORD });
    };
    const refused = await remove('olga@strict.example');
    assert.equal(refused.statusCode, 409, refused.body);
    assert.match(refused.body, /the team of Strict shop requires a second factor/);
    const off = await t.app.inject({ method: 'POST', url: `/dashboard/${a.entityId}/team/security`, headers: { ...FORM, cookie: ada }, payload: `csrf=${encodeURIComponent(csrf)}` });
    assert.equal(off.statusCode, 303, off.body);
    const removed = await remove('olga@strict.example');
    assert.equal(removed.statusCode, 200, removed.body);
    secrets.delete('olga@strict.example');
    assert.match(removed.body, /The authenticator app is removed/);
  });

  it('the team setting cannot be turned on from a sign-in without a second factor', async () => {
    const olga = await signInTo('/dashboard', 'olga@strict.example'); // no factor any more
    await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${b.entityId}/members`, headers: t.adminHeaders, payload: { email: 'olga@strict.example', role: 'admin' } });
    const team = await t.app.inject({ url: `/dashboard/${b.entityId}/team`, headers: { cookie: olga } });
    assert.equal(team.statusCode, 200, team.body);
    const csrf = hiddenFields(team.body).get('csrf')!;
    const on = await t.app.inject({ method: 'POST', url: `/dashboard/${b.entityId}/team/security`, headers: { ...FORM, cookie: olga }, payload: `csrf=${encodeURIComponent(csrf)}&require_second_factor=on` });
    assert.equal(on.statusCode, 409, on.body);
    assert.match(on.body, /sign in with a second factor yourself first/);
    const stored = await t.testDb.db.query('SELECT 1 FROM dashboard_team_settings WHERE entity_id = $1 AND require_second_factor', [b.entityId]);
    assert.equal(stored.rows.length, 0);
    const noCsrf = await t.app.inject({ method: 'POST', url: `/dashboard/${b.entityId}/team/security`, headers: { ...FORM, cookie: olga }, payload: 'require_second_factor=' });
    assert.equal(noCsrf.statusCode, 403);
  });

  it('PAYD_CONSOLE_REQUIRE_MFA: an administrator signed in with a password only is asked for a second factor; the last one stays', async () => {
    const passwordOnly = await signInTo('/console', 'root@strict.example');
    const refused = await t.app.inject({ url: '/console', headers: { cookie: passwordOnly } });
    assert.equal(refused.statusCode, 403, refused.body);
    assert.match(refused.body, /This console requires a second factor/);
    assert.equal((await t.app.inject({ url: '/console/users', headers: { cookie: passwordOnly } })).statusCode, 403);

    await enrol('root@strict.example');
    const withFactor = await signInTo('/console', 'root@strict.example');
    assert.equal((await t.app.inject({ url: '/console', headers: { cookie: withFactor } })).statusCode, 200);

    const { cookie, page } = await securityPage('root@strict.example');
    const remove = await postForm('/oauth/account/security/totp/remove', cookie, page.body, { password: PASSWORD });
    assert.equal(remove.statusCode, 409, remove.body);
    assert.match(remove.body, /the administration console requires a second factor/);
  });

  it('an administrator removes the second factor of a user who lost it: recorded as an event of that user, by whom', async () => {
    const root = await signInTo('/console', 'root@strict.example');
    const adaId = (await t.testDb.db.query<{ id: string }>(`SELECT id::text FROM idp_users WHERE email = 'ada@strict.example'`)).rows[0]!.id;
    const profile = await t.app.inject({ url: `/console/users/${adaId}`, headers: { cookie: root } });
    assert.equal(profile.statusCode, 200, profile.body);
    assert.match(profile.body, /id="second-factor">Authenticator app: <strong>on<\/strong>/);
    const csrf = hiddenFields(profile.body).get('csrf')!;
    const noCsrf = await t.app.inject({ method: 'POST', url: `/console/users/${adaId}/second-factor/remove`, headers: { ...FORM, cookie: root }, payload: '' });
    assert.equal(noCsrf.statusCode, 403);
    const removed = await t.app.inject({ method: 'POST', url: `/console/users/${adaId}/second-factor/remove`, headers: { ...FORM, cookie: root }, payload: `csrf=${encodeURIComponent(csrf)}` });
    assert.equal(removed.statusCode, 303, removed.body);
    secrets.delete('ada@strict.example');
    assert.match((await t.app.inject({ url: `/console/users/${adaId}`, headers: { cookie: root } })).body, /Authenticator app: <strong>off<\/strong>/);
    const events = (await t.app.inject({ url: `/admin/v1/identity/users/${adaId}/events`, headers: t.adminHeaders })).json();
    assert.equal(events[0].type, 'second_factor_removed');
    assert.equal(events[0].login_as_profile_id, 'root@strict.example');
    // She signs in with her password alone now.
    assert.deepEqual(decodeJwt((await idTokenOf('ada@strict.example')).id_token).amr, ['pwd']);
  });
});
