// The identity provider as an attacker and as a standard relying party (openid-client)
// see it: redirect matching of every response type, OAuth error bodies (RFC 6749 / 6750),
// CORS for Allowed Origins, state with and without PKCE, prompt / max_age, logout with
// id_token_hint, discovery. Each case names the docs/identity.md negative-case row it covers.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { SignJWT } from 'jose';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';
import { PASSWORD, cookieOf, createClient, createUser, hiddenFields, FORM } from './idp-helpers.ts';
import { REFRESH_REUSE_GRACE_SECONDS } from '../../src/identity/oauth/grants/refresh-token.ts';

const REDIRECT = 'https://rp.example/callback';
const LINKING = 'https://messenger.example/account_linking';
const SPA_ORIGIN = 'https://spa.example';

describe('identity provider: conformance and negative cases', () => {
  let t: TestApp;
  let base: string;
  let web: { client_id: string; client_secret: string };
  let bot: { client_id: string; client_secret: string };
  let spa: { client_id: string };
  const email = 'lin@example.com';

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ baseUrl: base });
    await t.app.listen({ port, host: '127.0.0.1' });
    await createUser(t, email, { email_verified: true });
    web = await createClient(t, { name: 'Web', callback_urls: [REDIRECT] });
    bot = await createClient(t, { name: 'Bot', callback_urls: [LINKING], response_types: ['messenger_code'] });
    spa = await createClient(t, { name: 'SPA', callback_urls: [REDIRECT], token_endpoint_auth_method: 'none', allowed_origins: [SPA_ORIGIN] });
  });
  after(() => t?.close());

  const authorizeUrl = (q: Record<string, string>) => `/oauth/authorize?${new URLSearchParams(q)}`;

  /** GET an authorization URL (with a session cookie when given) and post the sign-in form it renders. */
  async function signIn(url: string, opts: { cookie?: string; fields?: Record<string, string> } = {}) {
    const page = await t.app.inject({ url, headers: opts.cookie ? { cookie: opts.cookie } : {} });
    assert.equal(page.statusCode, 200, page.body);
    const form = hiddenFields(page.body);
    form.set('email', email);
    form.set('password', PASSWORD);
    for (const [k, v] of Object.entries(opts.fields ?? {})) form.set(k, v);
    const csrf = cookieOf(page, 'payd_idp_csrf') ?? opts.cookie?.split('; ').find((c) => c.startsWith('payd_idp_csrf=')) ?? '';
    const cookie = [csrf, ...(opts.cookie ? opts.cookie.split('; ').filter((c) => !c.startsWith('payd_idp_csrf=')) : [])].filter(Boolean).join('; ');
    return t.app.inject({ method: 'POST', url: '/oauth/authorize/login', headers: { ...FORM, cookie }, payload: form.toString() });
  }

  describe('item 1: redirect matching of messenger_code', () => {
    it('a code-only application refuses messenger_code to its callback with an injected query: error page, no redirect [redirect-messenger-injected-query]', async () => {
      const injected = `${REDIRECT}?code=x&state=y&next=https://attacker.example/`;
      const res = await t.app.inject({ url: authorizeUrl({ response_type: 'messenger_code', client_id: web.client_id, redirect_uri: injected, account_linking_token: 'ALT' }) });
      assert.equal(res.statusCode, 400, String(res.headers.location));
      assert.equal(res.headers.location, undefined);
      assert.doesNotMatch(res.body, /attacker\.example/);
    });

    it('a code-only application answers messenger_code to its exact callback with access_denied only', async () => {
      const res = await t.app.inject({ url: authorizeUrl({ response_type: 'messenger_code', client_id: web.client_id, redirect_uri: REDIRECT, account_linking_token: 'ALT' }) });
      assert.equal(res.statusCode, 303);
      assert.equal(res.headers.location, `${REDIRECT}?error=access_denied`);
    });

    it('a messenger application accepts only the messenger parameters on its callback [redirect-messenger-extra-param]', async () => {
      for (const bad of [`${LINKING}?next=https://attacker.example/`, `${LINKING}?psid=1&error=x`, `${LINKING}?psid=1&psid=2`, 'https://user@messenger.example/account_linking', `${LINKING}/`, `${LINKING}?code=1`]) {
        const res = await t.app.inject({ url: authorizeUrl({ response_type: 'messenger_code', client_id: bot.client_id, redirect_uri: bad, account_linking_token: 'ALT' }) });
        assert.equal(res.statusCode, 400, bad);
        assert.equal(res.headers.location, undefined, bad);
      }
      const ok = await t.app.inject({ url: authorizeUrl({ response_type: 'messenger_code', client_id: bot.client_id, redirect_uri: `${LINKING}?account_linking_token=ALT&psid=7`, account_linking_token: 'ALT' }) });
      assert.equal(ok.statusCode, 200, 'the sign-in page');
    });

    it('code and token compare exactly: a query, a trailing slash or a case change is refused [redirect-exact]', async () => {
      for (const bad of [`${REDIRECT}?next=https://attacker.example/`, `${REDIRECT}/`, 'https://RP.example/callback', `${REDIRECT}#x`]) {
        const res = await t.app.inject({ url: authorizeUrl({ response_type: 'code', client_id: web.client_id, redirect_uri: bad, state: 's', scope: 'openid' }) });
        assert.equal(res.statusCode, 400, bad);
        assert.equal(res.headers.location, undefined);
      }
    });
  });

  /** openid-client's configuration for an application of this provider. */
  const rp = (c: { client_id: string; client_secret?: string }, secret = c.client_secret) => client.discovery(
    new URL(base), c.client_id, secret ? { client_secret: secret, id_token_signed_response_alg: 'HS256' } : { id_token_signed_response_alg: 'RS256' },
    secret ? client.ClientSecretBasic(secret) : client.None(), { execute: [client.allowInsecureRequests] });

  /** openid-client's authorization URL, signed in through the hosted page; the callback URL and what to check it with. */
  async function authorizeWith(config: client.Configuration, extra: Record<string, string> = {}, opts: { cookie?: string; state?: boolean } = {}) {
    const verifier = client.randomPKCECodeVerifier();
    const state = opts.state === false ? undefined : client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT, scope: 'openid profile email', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', nonce,
      ...(state ? { state } : {}), ...extra,
    });
    const res = await signIn(url.pathname + url.search, opts);
    assert.equal(res.statusCode, 303, res.body);
    return { callback: new URL(String(res.headers.location)), verifier, state, nonce, session: cookieOf(res, 'payd_idp_session') };
  }

  describe('item 2: OAuth errors as RFC 6749 / 6750 (read by openid-client)', () => {
    it('an unknown code: openid-client reads invalid_grant from a ResponseBodyError [code-invalid]', async () => {
      const config = await rp(web);
      const a = await authorizeWith(config);
      a.callback.searchParams.set('code', 'not-a-code');
      const err = await client.authorizationCodeGrant(config, a.callback, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce }).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.ResponseBodyError, String(err));
      assert.equal(err.error, 'invalid_grant');
      assert.equal(err.status, 400);
      assert.match(err.error_description ?? '', /not valid/);
    });

    it('a reused code: invalid_grant through openid-client [code-reuse]', async () => {
      const config = await rp(web);
      const a = await authorizeWith(config);
      const checks = { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce };
      await client.authorizationCodeGrant(config, a.callback, checks);
      const err = await client.authorizationCodeGrant(config, a.callback, checks).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.ResponseBodyError, String(err));
      assert.equal(err.error, 'invalid_grant');
    });

    it('a PKCE downgrade (no verifier, or another one) is invalid_grant [pkce-downgrade]', async () => {
      const config = await rp(web);
      for (const verifier of [undefined, client.randomPKCECodeVerifier()]) {
        const a = await authorizeWith(config);
        const err = await client.authorizationCodeGrant(config, a.callback, { ...(verifier ? { pkceCodeVerifier: verifier } : {}), expectedState: a.state, expectedNonce: a.nonce })
          .then(() => undefined, (e: unknown) => e);
        assert.ok(err instanceof client.ResponseBodyError, String(err));
        assert.equal(err.error, 'invalid_grant');
      }
    });

    it('a wrong client secret: 401 with WWW-Authenticate naming invalid_client, and an application/json body [client-auth]', async () => {
      const config = await rp(web, 'wrong-secret');
      const a = await authorizeWith(config);
      const err = await client.authorizationCodeGrant(config, a.callback, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce }).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.WWWAuthenticateChallengeError, String(err));
      assert.equal(err.status, 401);
      assert.equal(err.cause[0]!.scheme, 'basic');
      assert.equal(err.cause[0]!.parameters.error, 'invalid_client');
      assert.match(String(err.response.headers.get('content-type')), /^application\/json/);
      const body = (await err.response.json()) as Record<string, unknown>;
      assert.equal(body.error, 'invalid_client');
      assert.equal(typeof body.error_description, 'string');
    });

    it('token, introspection and revocation refusals are application/json {error, error_description}; the payment API keeps problem+json', async () => {
      const form = (payload: Record<string, string>, headers: Record<string, string> = {}) => ({ method: 'POST' as const, headers: { ...FORM, ...headers }, payload: new URLSearchParams(payload).toString() });
      const cases = [
        { url: '/oauth/token', ...form({ grant_type: 'authorization_code', code: 'x', client_id: web.client_id, client_secret: 'nope' }), status: 401, error: 'invalid_client' },
        { url: '/oauth/token', ...form({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', client_id: web.client_id, client_secret: web.client_secret }), status: 400, error: 'unsupported_grant_type' },
        { url: '/oauth/token', ...form({ grant_type: 'authorization_code' }, { authorization: `Basic ${Buffer.from(`${web.client_id}:${web.client_secret}`).toString('base64')}` }), status: 400, error: 'invalid_request' },
        { url: '/oauth/introspect', ...form({ token: 'x', client_id: web.client_id, client_secret: 'nope' }), status: 401, error: 'invalid_client' },
        { url: '/oauth/introspect', ...form({ client_id: web.client_id }), status: 400, error: 'invalid_request' },
        { url: '/oauth/revoke', ...form({ token: 'x', client_id: 'unknown', client_secret: 'nope' }), status: 401, error: 'invalid_client' },
      ];
      for (const c of cases) {
        const res = await t.app.inject(c);
        assert.equal(res.statusCode, c.status, `${c.url}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /^application\/json/, c.url);
        const body = res.json();
        assert.equal(body.error, c.error, res.body);
        assert.equal(typeof body.error_description, 'string');
        assert.equal(res.headers['cache-control'], 'no-store');
        if (c.status === 401) assert.match(String(res.headers['www-authenticate']), /^Basic realm="payd", error="invalid_client"/);
      }
      const m = await t.createMerchant();
      const pay = await t.app.inject({ url: '/oauth/token', ...form({ grant_type: 'client_credentials', scope: 'nope' }, { 'x-api-key': m.apiKey }) });
      assert.match(String(pay.headers['content-type']), /^application\/problem\+json/);
      assert.equal(pay.json().error, 'invalid_scope');
    });

    it('/userinfo: 401 with a Bearer challenge; openid-client reads invalid_token', async () => {
      const config = await rp(web);
      const err = await client.fetchUserInfo(config, 'not-a-token', client.skipSubjectCheck).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.WWWAuthenticateChallengeError, String(err));
      assert.equal(err.cause[0]!.scheme, 'bearer');
      assert.equal(err.cause[0]!.parameters.error, 'invalid_token');
      const none = await t.app.inject({ url: '/userinfo' });
      assert.equal(none.statusCode, 401);
      assert.equal(none.headers['www-authenticate'], 'Bearer realm="payd-identity"');
      assert.match(String(none.headers['content-type']), /^application\/json/);
    });
  });

  describe('item 3: CORS for Allowed Origins', () => {
    const paths = ['/.well-known/openid-configuration', '/.well-known/jwks.json', '/oauth/token', '/userinfo'];

    it('an Allowed Origin gets Access-Control-Allow-Origin on discovery, JWKS, token and userinfo, and its preflight answered', async () => {
      for (const path of paths) {
        const pre = await fetch(`${base}${path}`, { method: 'OPTIONS', headers: { origin: SPA_ORIGIN, 'access-control-request-method': path === '/oauth/token' ? 'POST' : 'GET', 'access-control-request-headers': 'authorization' } });
        assert.equal(pre.status, 204, path);
        assert.equal(pre.headers.get('access-control-allow-origin'), SPA_ORIGIN);
        assert.match(String(pre.headers.get('access-control-allow-headers')), /Authorization/);
        assert.match(String(pre.headers.get('access-control-allow-methods')), path === '/oauth/token' ? /POST/ : /GET/);
        const res = path === '/oauth/token'
          ? await fetch(`${base}${path}`, { method: 'POST', headers: { origin: SPA_ORIGIN, 'content-type': 'application/x-www-form-urlencoded' }, body: `grant_type=authorization_code&code=x&client_id=${spa.client_id}` })
          : await fetch(`${base}${path}`, { headers: { origin: SPA_ORIGIN } });
        assert.equal(res.headers.get('access-control-allow-origin'), SPA_ORIGIN, path);
        assert.match(String(res.headers.get('vary')), /Origin/i);
        if (path === '/userinfo') assert.match(String(res.headers.get('access-control-expose-headers')), /WWW-Authenticate/);
      }
    });

    it('an origin no application lists gets no Access-Control-* header, and its preflight is refused [cors-other-origin]', async () => {
      for (const origin of ['https://attacker.example', 'https://spa.example.attacker.example', 'null', `${SPA_ORIGIN}:443`]) {
        for (const path of paths) {
          const pre = await fetch(`${base}${path}`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'GET' } });
          assert.equal(pre.status, 403, `${origin} ${path}`);
          assert.equal(pre.headers.get('access-control-allow-origin'), null);
          const res = await fetch(`${base}${path}`, { headers: { origin } });
          assert.equal(res.headers.get('access-control-allow-origin'), null, `${origin} ${path}`);
          assert.equal([...(res.headers as unknown as Iterable<[string, string]>)].filter(([k]) => k.startsWith('access-control-')).length, 0);
        }
      }
    });

    it('a single-page application (public client, PKCE) completes the flow through openid-client; POST /userinfo from its origin is readable', async () => {
      const config = await rp(spa);
      const a = await authorizeWith(config);
      const result = await client.authorizationCodeGrant(config, a.callback, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce });
      assert.ok(result.access_token);
      const info = await fetch(`${base}/userinfo`, { method: 'POST', headers: { origin: SPA_ORIGIN, authorization: `Bearer ${result.access_token}` } });
      assert.equal(info.status, 200);
      assert.equal(info.headers.get('access-control-allow-origin'), SPA_ORIGIN);
    });
  });

  describe('item 4: state optional with PKCE, required without', () => {
    it('openid-client PKCE without state: the code comes back without state and is exchanged', async () => {
      const config = await rp(web);
      const a = await authorizeWith(config, {}, { state: false });
      assert.equal(a.callback.searchParams.get('state'), null);
      const result = await client.authorizationCodeGrant(config, a.callback, { pkceCodeVerifier: a.verifier, expectedNonce: a.nonce });
      assert.ok(result.access_token);
    });

    it('without PKCE and without state: invalid_request, no code [state-missing]', async () => {
      const res = await t.app.inject({ url: authorizeUrl({ response_type: 'code', client_id: web.client_id, redirect_uri: REDIRECT, scope: 'openid' }) });
      assert.equal(res.statusCode, 303);
      const back = new URL(String(res.headers.location));
      assert.equal(back.searchParams.get('error'), 'invalid_request');
      assert.equal(back.searchParams.get('code'), null);
    });

    it('a state that differs from the one sent is refused by the relying party; the provider returns it unchanged [state-mismatch]', async () => {
      const config = await rp(web);
      const a = await authorizeWith(config);
      assert.equal(a.callback.searchParams.get('state'), a.state);
      const err = await client.authorizationCodeGrant(config, a.callback, { pkceCodeVerifier: a.verifier, expectedState: 'another', expectedNonce: a.nonce }).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.ClientError, String(err));
      assert.match(String((err.cause as Error | undefined)?.message), /state/);
    });

    it('a nonce is carried into the id_token unchanged; another expected nonce is refused by the relying party [nonce]', async () => {
      const config = await rp(web);
      const a = await authorizeWith(config);
      const err = await client.authorizationCodeGrant(config, a.callback, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: 'another' }).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.ClientError, String(err));
      assert.match(String((err.cause as Error | undefined)?.message), /nonce/);
    });
  });

  describe('item 5: prompt and max_age', () => {
    /** A signed-in browser: its session cookie, from a first sign-in. */
    const session = async () => (await authorizeWith(await rp(web))).session!;
    const urlFor = async (config: client.Configuration, extra: Record<string, string>) => {
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, ...extra });
      return { path: url.pathname + url.search, verifier, state };
    };

    it('prompt=none without a session: error=login_required back to the client, read by openid-client as AuthorizationResponseError', async () => {
      const config = await rp(web);
      const a = await urlFor(config, { prompt: 'none' });
      const res = await t.app.inject({ url: a.path });
      assert.equal(res.statusCode, 303);
      const callback = new URL(String(res.headers.location));
      assert.equal(callback.searchParams.get('code'), null);
      assert.equal(callback.searchParams.get('state'), a.state);
      const err = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: a.verifier, expectedState: a.state }).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof client.AuthorizationResponseError, String(err));
      assert.equal(err.error, 'login_required');
    });

    it('prompt=none with a session: a code at once, no page', async () => {
      const config = await rp(web);
      const cookie = await session();
      const a = await urlFor(config, { prompt: 'none' });
      const res = await t.app.inject({ url: a.path, headers: { cookie } });
      assert.equal(res.statusCode, 303);
      const result = await client.authorizationCodeGrant(config, new URL(String(res.headers.location)), { pkceCodeVerifier: a.verifier, expectedState: a.state });
      assert.ok(result.access_token);
    });

    it('prompt=login with a session: the sign-in page again, and a new auth_time in the id_token', async () => {
      const config = await rp(web);
      const cookie = await session();
      await t.testDb.db.query("UPDATE idp_login_sessions SET auth_time = now() - interval '10 minutes'");
      const a = await urlFor(config, { prompt: 'login' });
      const page = await t.app.inject({ url: a.path, headers: { cookie } });
      assert.equal(page.statusCode, 200, 'the sign-in form, not a code');
      assert.match(page.body, /name="password"/);
      const res = await signIn(a.path, { cookie });
      const result = await client.authorizationCodeGrant(config, new URL(String(res.headers.location)), { pkceCodeVerifier: a.verifier, expectedState: a.state });
      const authTime = result.claims()!.auth_time!;
      assert.ok(Math.abs(authTime - Date.now() / 1000) < 60, `auth_time ${authTime} is the new sign-in`);
    });

    it('max_age: a session older than max_age signs in again; a younger one does not, and auth_time is the session\'s', async () => {
      const config = await rp(web);
      const cookie = await session();
      await t.testDb.db.query("UPDATE idp_login_sessions SET auth_time = now() - interval '2 hours'");
      const old = await urlFor(config, { max_age: '3600' });
      assert.equal((await t.app.inject({ url: old.path, headers: { cookie } })).statusCode, 200, 'the sign-in form');
      const none = await urlFor(config, { max_age: '3600', prompt: 'none' });
      const refused = await t.app.inject({ url: none.path, headers: { cookie } });
      assert.equal(new URL(String(refused.headers.location)).searchParams.get('error'), 'login_required');
      const young = await urlFor(config, { max_age: '86400' });
      const res = await t.app.inject({ url: young.path, headers: { cookie } });
      assert.equal(res.statusCode, 303);
      const result = await client.authorizationCodeGrant(config, new URL(String(res.headers.location)), { pkceCodeVerifier: young.verifier, expectedState: young.state, maxAge: 86400 });
      const authTime = result.claims()!.auth_time!;
      assert.ok(Date.now() / 1000 - authTime > 7000, `auth_time ${authTime} is the session's sign-in, two hours ago`);
      const bad = await urlFor(config, { max_age: '-1' });
      assert.equal(new URL(String((await t.app.inject({ url: bad.path })).headers.location)).searchParams.get('error'), 'invalid_request');
    });

    it('discovery lists prompt_values_supported', async () => {
      const meta = (await t.app.inject({ url: '/.well-known/openid-configuration' })).json();
      assert.deepEqual(meta.prompt_values_supported, ['none', 'login', 'consent']);
    });
  });

  describe('item 8: logout with id_token_hint, confirmation otherwise', () => {
    /** A signed-in browser and the id_token its relying party holds. */
    async function signedIn() {
      const config = await rp(web);
      const a = await authorizeWith(config);
      const result = await client.authorizationCodeGrant(config, a.callback, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce });
      return { config, cookie: a.session!, idToken: result.id_token!, sub: result.claims()!.sub };
    }
    /** Whether the browser's session still signs it in (a code at once with prompt=none). */
    const stillSignedIn = async (cookie: string) => {
      const res = await t.app.inject({ url: authorizeUrl({ response_type: 'code', client_id: web.client_id, redirect_uri: REDIRECT, state: 's', scope: 'openid', prompt: 'none' }), headers: { cookie } });
      return new URL(String(res.headers.location)).searchParams.has('code');
    };

    it('a valid id_token_hint names the client (no client_id), signs out at once and goes back to the registered URI with state', async () => {
      const { config, cookie, idToken } = await signedIn();
      const end = client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: REDIRECT, state: 'bye' });
      end.searchParams.delete('client_id');
      const out = await t.app.inject({ url: end.pathname + end.search, headers: { cookie } });
      assert.equal(out.statusCode, 303, out.body);
      assert.equal(out.headers.location, `${REDIRECT}?state=bye`);
      assert.equal(await stillSignedIn(cookie), false);
    });

    it('the hint\'s sid ends the session it names, also when the browser sends no cookie (a third-party context)', async () => {
      const { config, cookie, idToken } = await signedIn();
      const end = client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: REDIRECT });
      const out = await t.app.inject({ url: end.pathname + end.search }); // no cookie
      assert.equal(out.statusCode, 303, out.body);
      assert.equal(await stillSignedIn(cookie), false, 'the session named by sid ended');
    });

    it('an expired id_token_hint still proves the relying party', async () => {
      const { cookie, sub } = await signedIn();
      const past = Math.floor(Date.now() / 1000) - 7200;
      const expired = await new SignJWT({ sub, aud: web.client_id, iss: base, iat: past, exp: past + 60 }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(web.client_secret));
      const out = await t.app.inject({ url: `/oauth/logout?${new URLSearchParams({ id_token_hint: expired, post_logout_redirect_uri: REDIRECT })}`, headers: { cookie } });
      assert.equal(out.statusCode, 303);
      assert.equal(await stillSignedIn(cookie), false);
    });

    it('a garbage, forged, foreign-issuer or mismatched hint is refused: no sign-out, no redirect [logout-bad-hint]', async () => {
      const { cookie, sub, idToken } = await signedIn();
      const now = Math.floor(Date.now() / 1000);
      const sign = (claims: Record<string, unknown>, secret = web.client_secret) =>
        new SignJWT({ sub, aud: web.client_id, iss: base, iat: now, exp: now + 60, ...claims }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(secret));
      const [h, p] = idToken.split('.');
      const hints = [
        'garbage', `${h}.${p}.`, `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: 'other' })).toString('base64url')}.${idToken.split('.')[2]}`,
        await sign({}, 'not-the-client-secret'), await sign({ iss: 'https://evil.example' }),
      ];
      for (const hint of hints) {
        const out = await t.app.inject({ url: `/oauth/logout?${new URLSearchParams({ id_token_hint: hint, post_logout_redirect_uri: REDIRECT })}`, headers: { cookie } });
        assert.equal(out.statusCode, 400, hint);
        assert.equal(out.headers.location, undefined);
      }
      const mismatch = await t.app.inject({ url: `/oauth/logout?${new URLSearchParams({ id_token_hint: idToken, client_id: bot.client_id })}`, headers: { cookie } });
      assert.equal(mismatch.statusCode, 400, 'client_id must be the hint\'s audience');
      assert.equal(await stillSignedIn(cookie), true);
    });

    it('a GET logout without a hint (a link from any site) asks first; only the confirmation posted with the CSRF token signs out [logout-csrf]', async () => {
      const { cookie } = await signedIn();
      const url = `/oauth/logout?${new URLSearchParams({ client_id: web.client_id, post_logout_redirect_uri: REDIRECT, state: 'st' })}`;
      const page = await t.app.inject({ url, headers: { cookie } });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /Do you want to sign out/);
      assert.equal(await stillSignedIn(cookie), true, 'the link alone signs nobody out');
      const form = hiddenFields(page.body);
      const forged = new URLSearchParams(form);
      forged.delete('csrf');
      forged.set('confirm', '1');
      const refused = await t.app.inject({ method: 'POST', url: '/oauth/logout', headers: { ...FORM, cookie }, payload: forged.toString() });
      assert.equal(refused.statusCode, 403, 'a cross-site post without the token');
      assert.equal(await stillSignedIn(cookie), true);
      form.set('confirm', '1');
      const csrf = cookieOf(page, 'payd_idp_csrf') ?? '';
      const done = await t.app.inject({ method: 'POST', url: '/oauth/logout', headers: { ...FORM, cookie: `${cookie}; ${csrf}` }, payload: form.toString() });
      assert.equal(done.statusCode, 303, done.body);
      assert.equal(done.headers.location, `${REDIRECT}?state=st`);
      assert.equal(await stillSignedIn(cookie), false);
    });

    it('a hint of another user than the signed-in one asks first', async () => {
      const { idToken } = await signedIn();
      await createUser(t, 'other@example.com');
      const page = await t.app.inject({ url: authorizeUrl({ response_type: 'code', client_id: web.client_id, redirect_uri: REDIRECT, state: 's', scope: 'openid' }) });
      const form = hiddenFields(page.body);
      form.set('email', 'other@example.com');
      form.set('password', PASSWORD);
      const res = await t.app.inject({ method: 'POST', url: '/oauth/authorize/login', headers: { ...FORM, cookie: cookieOf(page, 'payd_idp_csrf') ?? '' }, payload: form.toString() });
      const cookie = cookieOf(res, 'payd_idp_session')!;
      const out = await t.app.inject({ url: `/oauth/logout?${new URLSearchParams({ id_token_hint: idToken })}`, headers: { cookie } });
      assert.equal(out.statusCode, 200);
      assert.match(out.body, /Do you want to sign out/);
      assert.equal(await stillSignedIn(cookie), true);
    });

    it('post_logout_redirect_uri must be registered for the hint\'s client: otherwise signed out without a redirect [logout-open-redirect]', async () => {
      for (const uri of ['https://attacker.example/', `${REDIRECT}?next=https://attacker.example/`, LINKING]) {
        const { cookie, idToken } = await signedIn();
        const out = await t.app.inject({ url: `/oauth/logout?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: uri })}`, headers: { cookie } });
        assert.equal(out.statusCode, 200, uri);
        assert.equal(out.headers.location, undefined);
        assert.match(out.body, /did not send you back/);
      }
    });
  });

  describe('discovery: complete for what is served', () => {
    it('lists every endpoint, method and value the provider serves, and each endpoint answers', async () => {
      const config = await rp(web);
      const meta = config.serverMetadata();
      assert.equal(meta.issuer, base);
      for (const k of ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'jwks_uri', 'end_session_endpoint', 'revocation_endpoint', 'introspection_endpoint'] as const) {
        const url = meta[k];
        assert.ok(typeof url === 'string' && url.startsWith(`${base}/`), k);
        const res = await t.app.inject({ method: k === 'token_endpoint' || k === 'revocation_endpoint' || k === 'introspection_endpoint' ? 'POST' : 'GET', url: new URL(url).pathname });
        assert.notEqual(res.statusCode, 404, `${k} is served`);
      }
      assert.deepEqual(meta.code_challenge_methods_supported, ['S256']);
      assert.deepEqual(meta.token_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'none']);
      assert.deepEqual(meta.prompt_values_supported, ['none', 'login', 'consent']);
      assert.equal(meta.request_uri_parameter_supported, false, 'its default is true: payd says it does not serve request_uri');
      const claims = meta.claims_supported as string[];
      for (const c of ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'given_name', 'family_name', 'email', 'email_verified']) assert.ok(claims.includes(c), c);
      for (const s of ['openid', 'profile', 'email']) assert.ok(meta.scopes_supported!.includes(s), s);
      assert.ok(meta.grant_types_supported!.includes('authorization_code'));
    });
  });

  describe('refresh tokens (offline_access): rotation and reuse detection', () => {
    async function offline(c: { client_id: string; client_secret: string } = web) {
      const config = await rp(c);
      const a = await authorizeWith(config, { scope: 'openid email offline_access' });
      const result = await client.authorizationCodeGrant(config, a.callback, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce });
      return { config, result };
    }
    const userinfoStatus = async (token: string) => (await t.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${token}` } })).statusCode;
    const refreshError = (config: client.Configuration, token: string, params?: Record<string, string>) =>
      client.refreshTokenGrant(config, token, params).then(() => undefined, (e: unknown) => e);

    it('without offline_access no refresh token; with it, openid-client refreshes and each use rotates the token', async () => {
      const config = await rp(web);
      const plain = await authorizeWith(config);
      const noRefresh = await client.authorizationCodeGrant(config, plain.callback, { pkceCodeVerifier: plain.verifier, expectedState: plain.state, expectedNonce: plain.nonce });
      assert.equal(noRefresh.refresh_token, undefined);
      const { result } = await offline();
      assert.ok(result.refresh_token);
      const next = await client.refreshTokenGrant(config, result.refresh_token);
      assert.ok(next.refresh_token && next.refresh_token !== result.refresh_token, 'rotated');
      assert.equal(await userinfoStatus(next.access_token), 200);
      assert.equal(next.claims()?.sub, result.claims()!.sub, 'the refreshed id_token is the same user\'s');
      const narrower = await client.refreshTokenGrant(config, next.refresh_token!, { scope: 'openid' });
      assert.equal(narrower.scope, 'openid');
      const wider = await refreshError(config, narrower.refresh_token!, { scope: 'openid email profile' });
      assert.ok(wider instanceof client.ResponseBodyError, String(wider));
      assert.equal(wider.error, 'invalid_scope');
      assert.ok(await client.refreshTokenGrant(config, narrower.refresh_token!), 'a refused request does not burn the token');
    });

    /** Moves a used refresh token's use back in time, past the reuse grace (the database's clock decides it). */
    const ageUse = (token: string, seconds: number) => t.testDb.db.query(
      `UPDATE idp_refresh_tokens SET used_at = used_at - make_interval(secs => $2) WHERE token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`, [token, seconds]);

    it('a used refresh token presented again revokes the whole family: every refresh and access token of it [refresh-reuse]', async () => {
      const { config, result } = await offline();
      const second = await client.refreshTokenGrant(config, result.refresh_token!);
      await ageUse(result.refresh_token!, REFRESH_REUSE_GRACE_SECONDS + 1);
      const replay = await refreshError(config, result.refresh_token!);
      assert.ok(replay instanceof client.ResponseBodyError, String(replay));
      assert.equal(replay.error, 'invalid_grant');
      const after = await refreshError(config, second.refresh_token!);
      assert.ok(after instanceof client.ResponseBodyError);
      assert.equal(after.error, 'invalid_grant', 'the newest token of the family is revoked too');
      assert.equal(await userinfoStatus(second.access_token), 401);
      assert.equal(await userinfoStatus(result.access_token), 401);
    });

    it('its client presenting it again within the grace (a lost answer) gets new tokens, and the first successor is revoked; later it is reuse', async () => {
      const { config, result } = await offline();
      const lost = await client.refreshTokenGrant(config, result.refresh_token!); // the answer the client never got
      const again = await client.refreshTokenGrant(config, result.refresh_token!);
      assert.ok(again.refresh_token && again.refresh_token !== lost.refresh_token);
      const lostUse = await refreshError(config, lost.refresh_token!);
      assert.ok(lostUse instanceof client.ResponseBodyError, 'the lost successor is revoked: one live refresh token per family');
      // Presenting the revoked successor is reuse: the family ends (as with a stolen token).
      const next = await refreshError(config, again.refresh_token!);
      assert.ok(next instanceof client.ResponseBodyError);
      assert.equal(next.error, 'invalid_grant');

      const fresh = await offline();
      await client.refreshTokenGrant(fresh.config, fresh.result.refresh_token!);
      const other = await createClient(t, { name: 'Other in grace', callback_urls: [REDIRECT] });
      const stolen = await refreshError(await rp(other), fresh.result.refresh_token!);
      assert.ok(stolen instanceof client.ResponseBodyError, 'another client gets nothing, also within the grace');
      await ageUse(fresh.result.refresh_token!, REFRESH_REUSE_GRACE_SECONDS + 1);
      const late = await refreshError(fresh.config, fresh.result.refresh_token!);
      assert.ok(late instanceof client.ResponseBodyError);
      assert.equal(late.error, 'invalid_grant');
    });

    it('another client cannot use it (and cannot set off the revocation); a replayed code revokes the family it started', async () => {
      const other = await createClient(t, { name: 'Other', callback_urls: [REDIRECT] });
      const { config, result } = await offline();
      const stolen = await refreshError(await rp(other), result.refresh_token!);
      assert.ok(stolen instanceof client.ResponseBodyError);
      assert.equal(stolen.error, 'invalid_grant');
      const again = await client.refreshTokenGrant(config, result.refresh_token!);
      assert.ok(again.access_token, 'still usable by its client');

      const cfg = await rp(web);
      const a = await authorizeWith(cfg, { scope: 'openid offline_access' });
      const checks = { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce };
      const first = await client.authorizationCodeGrant(cfg, a.callback, checks);
      await client.authorizationCodeGrant(cfg, a.callback, checks).catch(() => undefined);
      const err = await refreshError(cfg, first.refresh_token!);
      assert.ok(err instanceof client.ResponseBodyError);
      assert.equal(err.error, 'invalid_grant');
    });

    it('revocation (RFC 7009) of a refresh token revokes its family', async () => {
      const { config, result } = await offline();
      await client.tokenRevocation(config, result.refresh_token!);
      const err = await refreshError(config, result.refresh_token!);
      assert.ok(err instanceof client.ResponseBodyError);
      assert.equal(err.error, 'invalid_grant');
      assert.equal(await userinfoStatus(result.access_token), 401);
    });
  });
});
