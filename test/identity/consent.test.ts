// Consent for applications that are not first-party, and the registered client
// authentication method, as a standard relying party (openid-client) sees them. Each case
// names the docs/identity.md negative-case row it covers.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';
import { FORM, PASSWORD, cookieOf, count, createClient, createUser, hiddenFields } from './idp-helpers.ts';

const REDIRECT = 'https://rp.example/callback';

describe('identity provider: consent and client authentication methods', () => {
  let t: TestApp;
  let base: string;
  let third: { client_id: string; client_secret: string };
  let first: { client_id: string; client_secret: string };
  const email = 'mei@example.com';

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ baseUrl: base });
    await t.app.listen({ port, host: '127.0.0.1' });
    await createUser(t, email, { email_verified: true });
    third = await createClient(t, { name: 'Third <Party> Shop', callback_urls: [REDIRECT], first_party: false });
    first = await createClient(t, { name: 'Own app', callback_urls: [REDIRECT] });
  });
  after(() => t?.close());

  const rp = (c: { client_id: string; client_secret?: string }, auth?: client.ClientAuth) => client.discovery(
    new URL(base), c.client_id, c.client_secret ? { client_secret: c.client_secret, id_token_signed_response_alg: 'HS256' } : { id_token_signed_response_alg: 'RS256' },
    auth ?? (c.client_secret ? client.ClientSecretBasic(c.client_secret) : client.None()), { execute: [client.allowInsecureRequests] });

  /** An authorization request of openid-client: the path to GET and what to check the callback with. */
  async function request(config: client.Configuration, extra: Record<string, string> = {}) {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT, scope: 'openid email', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', nonce, state, ...extra,
    });
    return { path: url.pathname + url.search, checks: { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce }, state };
  }

  /** Signs in on the form of this path; answers the reply and the browser's cookies. */
  async function signIn(path: string) {
    const page = await t.app.inject({ url: path });
    assert.equal(page.statusCode, 200, page.body);
    const form = hiddenFields(page.body);
    form.set('email', email);
    form.set('password', PASSWORD);
    const csrf = cookieOf(page, 'payd_idp_csrf')!;
    const res = await t.app.inject({ method: 'POST', url: '/oauth/authorize/login', headers: { ...FORM, cookie: csrf }, payload: form.toString() });
    return { res, cookie: [csrf, cookieOf(res, 'payd_idp_session')].filter(Boolean).join('; ') };
  }

  /** Posts the consent page's form with a decision. */
  const decide = (page: { body: string }, cookie: string, decision: 'allow' | 'deny', drop?: string) => {
    const form = hiddenFields(page.body);
    form.set('decision', decision);
    if (drop) form.delete(drop);
    return t.app.inject({ method: 'POST', url: '/oauth/authorize/consent', headers: { ...FORM, cookie }, payload: form.toString() });
  };
  const isConsentPage = (res: { statusCode: number; body: string }) => res.statusCode === 200 && res.body.includes('action="/oauth/authorize/consent"');
  const scopesListed = (html: string) => [...(/<ul id="consent-scopes">(.*?)<\/ul>/s.exec(html)?.[1] ?? '').matchAll(/<li>([^<]*)<\/li>/g)].map((m) => m[1]);
  const callbackOf = (res: { headers: Record<string, unknown> }) => new URL(String(res.headers.location));

  describe('consent', () => {
    let cookie: string;

    it('after sign-in, a third-party application gets the consent page: its name, the scopes in words, Allow / Deny with CSRF, the strict CSP', async () => {
      const config = await rp(third);
      const a = await request(config);
      const s = await signIn(a.path);
      cookie = s.cookie;
      assert.ok(isConsentPage(s.res), s.res.body);
      assert.match(s.res.body, /Third &lt;Party> Shop/, 'the name, escaped');
      assert.deepEqual(scopesListed(s.res.body), ['Know who you are: your payd account identifier', 'See your email address and whether it is verified']);
      assert.match(s.res.body, /name="csrf" value="[^"]+"/);
      assert.doesNotMatch(s.res.body, /<script/);
      assert.match(String(s.res.headers['content-security-policy']), /script-src 'self'/);
      // No form-action: the redirects after Allow end wherever the client's callback goes
      // next, which no list can name (see identity-social.e2e.test.ts); frames stay refused.
      assert.doesNotMatch(String(s.res.headers['content-security-policy']), /form-action/);
      assert.match(String(s.res.headers['content-security-policy']), /frame-ancestors 'none'/);
      assert.equal(await count(t, 'SELECT count(*)::int AS n FROM idp_codes WHERE client_id = $1', [third.client_id]), 0, 'no code before consent');
    });

    it('Deny redirects with error=access_denied and the state; nothing is remembered [consent-deny]', async () => {
      const config = await rp(third);
      const a = await request(config);
      const page = await t.app.inject({ url: a.path, headers: { cookie } });
      assert.ok(isConsentPage(page), 'a signed-in browser sees the page too');
      const denied = await decide(page, cookie, 'deny');
      assert.equal(denied.statusCode, 303);
      const err = await client.authorizationCodeGrant(config, callbackOf(denied), a.checks).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.AuthorizationResponseError, String(err));
      assert.equal(err.error, 'access_denied');
      assert.equal(callbackOf(denied).searchParams.get('state'), a.state);
      assert.equal(await count(t, 'SELECT count(*)::int AS n FROM idp_consents'), 0);
    });

    it('a consent form without the CSRF token, or posted cross-site without the cookie, is refused [consent-csrf]', async () => {
      const a = await request(await rp(third));
      const page = await t.app.inject({ url: a.path, headers: { cookie } });
      assert.equal((await decide(page, cookie, 'allow', 'csrf')).statusCode, 403);
      const session = cookie.split('; ').find((c) => c.startsWith('payd_idp_session='))!;
      assert.equal((await decide(page, session, 'allow')).statusCode, 403, 'no CSRF cookie');
      assert.equal((await decide(page, cookie, 'maybe' as 'allow')).statusCode, 400);
      assert.equal(await count(t, 'SELECT count(*)::int AS n FROM idp_consents'), 0);
    });

    it('prompt=none when consent is needed answers error=consent_required (openid-client), no page, no code [consent-none]', async () => {
      const config = await rp(third);
      const a = await request(config, { prompt: 'none' });
      const res = await t.app.inject({ url: a.path, headers: { cookie } });
      assert.equal(res.statusCode, 303, res.body);
      const err = await client.authorizationCodeGrant(config, callbackOf(res), a.checks).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.AuthorizationResponseError, String(err));
      assert.equal(err.error, 'consent_required');
      assert.equal(callbackOf(res).searchParams.get('state'), a.state);
    });

    it('Allow issues the code (openid-client exchanges it); the grant is remembered: the next request skips the page, prompt=none gets a code', async () => {
      const config = await rp(third);
      const a = await request(config);
      const page = await t.app.inject({ url: a.path, headers: { cookie } });
      const allowed = await decide(page, cookie, 'allow');
      assert.equal(allowed.statusCode, 303, allowed.body);
      const tokens = await client.authorizationCodeGrant(config, callbackOf(allowed), a.checks);
      assert.equal(tokens.claims()?.email, email);
      const events = (await t.app.inject({ url: `/admin/v1/identity/users/${tokens.claims()!.sub}/events`, headers: t.adminHeaders })).json();
      assert.equal(events[0].auth_type, 'sso', 'signed in from the session, then allowed');

      const again = await request(config);
      const skipped = await t.app.inject({ url: again.path, headers: { cookie } });
      assert.equal(skipped.statusCode, 303, 'no page');
      assert.ok(await client.authorizationCodeGrant(config, callbackOf(skipped), again.checks));
      const silent = await request(config, { prompt: 'none', scope: 'openid' });
      const code = await t.app.inject({ url: silent.path, headers: { cookie } });
      assert.ok(await client.authorizationCodeGrant(config, callbackOf(code), silent.checks), 'a subset of the grant');
    });

    it('asking for a new scope shows the page again for the new one only; prompt=consent forces it for all [consent-new-scope]', async () => {
      const config = await rp(third);
      const a = await request(config, { scope: 'openid email profile' });
      const page = await t.app.inject({ url: a.path, headers: { cookie } });
      assert.ok(isConsentPage(page));
      assert.deepEqual(scopesListed(page.body), ['See your name']);
      const none = await request(config, { scope: 'openid email profile', prompt: 'none' });
      assert.equal(callbackOf(await t.app.inject({ url: none.path, headers: { cookie } })).searchParams.get('error'), 'consent_required');
      const tokens = await client.authorizationCodeGrant(config, callbackOf(await decide(page, cookie, 'allow')), a.checks);
      assert.equal(tokens.claims()?.given_name, 'Test', 'profile granted');
      const rows = await t.testDb.db.query<{ scopes: string[] }>('SELECT scopes FROM idp_consents WHERE client_id = $1', [third.client_id]);
      assert.deepEqual(rows.rows[0]!.scopes, ['email', 'openid', 'profile']);

      const forced = await request(config, { prompt: 'consent' });
      const again = await t.app.inject({ url: forced.path, headers: { cookie } });
      assert.ok(isConsentPage(again), 'prompt=consent');
      assert.deepEqual(scopesListed(again.body).length, 2);
    });

    it('prompt=consent survives the sign-in form; the login event still says password', async () => {
      const config = await rp(third);
      const a = await request(config, { prompt: 'consent login' });
      const s = await signIn(a.path);
      assert.ok(isConsentPage(s.res), 'the page after the form, although everything is granted');
      const tokens = await client.authorizationCodeGrant(config, callbackOf(await decide(s.res, s.cookie, 'allow')), a.checks);
      const events = (await t.app.inject({ url: `/admin/v1/identity/users/${tokens.claims()!.sub}/events`, headers: t.adminHeaders })).json();
      assert.equal(events[0].auth_type, 'password');
      const forged = hiddenFields(s.res.body);
      assert.ok(forged.get('how_mac'));
    });

    it('a first-party application never sees the page, prompt=consent included', async () => {
      const config = await rp(first);
      for (const extra of [{}, { prompt: 'consent' }] as Array<Record<string, string>>) {
        const a = await request(config, extra);
        const res = await t.app.inject({ url: a.path, headers: { cookie } });
        assert.equal(res.statusCode, 303, res.body);
        assert.ok(await client.authorizationCodeGrant(config, callbackOf(res), a.checks));
      }
    });

    it('the user sees their grants and revokes one: its refresh tokens stop working, the page shows again [consent-revoke]', async () => {
      const config = await rp(third);
      const a = await request(config, { scope: 'openid email offline_access' });
      const page = await t.app.inject({ url: a.path, headers: { cookie } });
      const tokens = await client.authorizationCodeGrant(config, callbackOf(await decide(page, cookie, 'allow')), a.checks);
      assert.ok(tokens.refresh_token);

      const list = await t.app.inject({ url: '/oauth/account/applications', headers: { cookie } });
      assert.equal(list.statusCode, 200);
      assert.match(list.body, /Third &lt;Party> Shop/);
      assert.match(list.body, /Keep access while you are not using it/);
      assert.doesNotMatch(list.body, /Own app/, 'first-party applications have no grant');
      assert.match(String(list.headers['content-security-policy']), /default-src 'none'/);

      const form = hiddenFields(list.body);
      assert.equal(form.get('client_id'), third.client_id);
      const noCsrf = await t.app.inject({ method: 'POST', url: '/oauth/account/applications/revoke', headers: { ...FORM, cookie }, payload: `client_id=${third.client_id}` });
      assert.equal(noCsrf.statusCode, 403);
      const revoked = await t.app.inject({ method: 'POST', url: '/oauth/account/applications/revoke', headers: { ...FORM, cookie }, payload: form.toString() });
      assert.equal(revoked.statusCode, 303);
      assert.doesNotMatch((await t.app.inject({ url: '/oauth/account/applications', headers: { cookie } })).body, /Third &lt;Party> Shop/);

      const refused = await client.refreshTokenGrant(config, tokens.refresh_token!).then(() => undefined, (e: unknown) => e);
      assert.ok(refused instanceof client.ResponseBodyError, String(refused));
      assert.equal(refused.error, 'invalid_grant');
      assert.equal((await t.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${tokens.access_token}` } })).statusCode, 401);
      const next = await request(config);
      assert.ok(isConsentPage(await t.app.inject({ url: next.path, headers: { cookie } })), 'asked again');
    });

    it('the applications page signs in a browser without a session (CSRF, the sign-in throttle\'s messages)', async () => {
      const page = await t.app.inject({ url: '/oauth/account/applications' });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /action="\/oauth\/account\/login"/);
      const csrf = cookieOf(page, 'payd_idp_csrf')!;
      const form = hiddenFields(page.body);
      form.set('email', email);
      form.set('password', 'wrong password!');
      const wrong = await t.app.inject({ method: 'POST', url: '/oauth/account/login', headers: { ...FORM, cookie: csrf }, payload: form.toString() });
      assert.match(wrong.body, /Wrong email or password/);
      form.set('password', PASSWORD);
      const ok = await t.app.inject({ method: 'POST', url: '/oauth/account/login', headers: { ...FORM, cookie: csrf }, payload: form.toString() });
      assert.equal(ok.statusCode, 303);
      const list = await t.app.inject({ url: '/oauth/account/applications', headers: { cookie: String(cookieOf(ok, 'payd_idp_session')) } });
      assert.match(list.body, /Signed in as <strong>mei@example.com/);
    });
  });

  describe('the registered client authentication method is enforced', () => {
    it('client_secret_basic refuses client_secret_post: 401 invalid_client with WWW-Authenticate; the code is not burnt [auth-method]', async () => {
      const a = await request(await rp(first));
      const res = await t.app.inject({ url: a.path, headers: { cookie: await browser() } });
      const wrong = await rp(first, client.ClientSecretPost(first.client_secret));
      const err = await client.authorizationCodeGrant(wrong, callbackOf(res), a.checks).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.WWWAuthenticateChallengeError, String(err));
      assert.equal(err.status, 401);
      assert.equal(err.cause[0]!.parameters.error, 'invalid_client');
      assert.ok(await client.authorizationCodeGrant(await rp(first), callbackOf(res), a.checks), 'with Basic, the same code works');
    });

    it('client_secret_post refuses client_secret_basic, and introspection and revocation do too [auth-method]', async () => {
      const post = await createClient(t, { name: 'Post', callback_urls: [REDIRECT], token_endpoint_auth_method: 'client_secret_post' });
      const good = await rp(post, client.ClientSecretPost(post.client_secret));
      const a = await request(good);
      const res = await t.app.inject({ url: a.path, headers: { cookie: await browser() } });
      const bad = await rp(post, client.ClientSecretBasic(post.client_secret));
      const err = await client.authorizationCodeGrant(bad, callbackOf(res), a.checks).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.WWWAuthenticateChallengeError, String(err));
      assert.equal(err.cause[0]!.parameters.error, 'invalid_client');
      const tokens = await client.authorizationCodeGrant(good, callbackOf(res), a.checks);
      for (const call of [() => client.tokenIntrospection(bad, tokens.access_token), () => client.tokenRevocation(bad, tokens.access_token)]) {
        const e = await call().then(() => undefined, (x: unknown) => x);
        assert.ok(e instanceof client.WWWAuthenticateChallengeError, String(e));
        assert.equal(e.status, 401);
      }
      assert.equal((await client.tokenIntrospection(good, tokens.access_token)).active, true);
    });

    it('a public client (none) refuses any secret, Basic or post [auth-method]', async () => {
      const spa = await createClient(t, { name: 'SPA', callback_urls: [REDIRECT], token_endpoint_auth_method: 'none' });
      for (const auth of [client.ClientSecretPost('guess'), client.ClientSecretBasic('guess')]) {
        const cfg = await client.discovery(new URL(base), spa.client_id, { id_token_signed_response_alg: 'RS256', client_secret: 'guess' }, auth, { execute: [client.allowInsecureRequests] });
        const a = await request(cfg);
        const res = await t.app.inject({ url: a.path, headers: { cookie: await browser() } });
        const err = await client.authorizationCodeGrant(cfg, callbackOf(res), a.checks).then(() => undefined, (e: unknown) => e);
        assert.ok(err instanceof client.WWWAuthenticateChallengeError, String(err));
        assert.equal(err.cause[0]!.parameters.error, 'invalid_client');
        assert.ok(await client.authorizationCodeGrant(await rp(spa), callbackOf(res), a.checks), 'with none, the same code works');
      }
    });

    it('client credentials (Management API) follow the registered method too', async () => {
      const mgmt = await createClient(t, { name: 'Back office', callback_urls: [REDIRECT], management_scopes: ['read:users'] });
      const wrong = await rp(mgmt, client.ClientSecretPost(mgmt.client_secret));
      const err = await client.clientCredentialsGrant(wrong).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.WWWAuthenticateChallengeError, String(err));
      assert.equal(err.cause[0]!.parameters.error, 'invalid_client');
      assert.ok((await client.clientCredentialsGrant(await rp(mgmt))).access_token);
    });

    it('discovery lists the three methods; the Management API registers each', async () => {
      const meta = (await t.app.inject({ url: '/.well-known/openid-configuration' })).json();
      assert.deepEqual(meta.token_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'none']);
      assert.deepEqual(meta.introspection_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'none']);
    });
  });

  /** A browser signed in (a session cookie). */
  let signedIn: string | undefined;
  async function browser(): Promise<string> {
    if (!signedIn) signedIn = (await signIn((await request(await rp(first))).path)).cookie;
    return signedIn;
  }
});
