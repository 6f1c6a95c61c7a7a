// Protocol fixes seen when payd's identity provider was tried as a relying party would:
// POST /oauth/authorize, request objects refused, the password grant opt-in, CORS
// credentials, HSTS, the revocation body, at_hash / sid / azp in id_tokens, the session
// cookie's SameSite over https.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import { createTestApp, expectOAuthError, expectProblem, type TestApp } from '../helpers/app.ts';
import { type Client, FORM, PASSWORD, authorizeRequest, basic, codeFor, cookieOf, createClient, createUser, exchange, hiddenFields, signIn } from './idp-helpers.ts';

const CALLBACK = 'https://rp.example/callback';
const SHOP = 'https://shop.example';

describe('identity provider protocol fixes', () => {
  let t: TestApp;
  let web: Client;
  let spa: Client;
  const email = 'ada@example.com';

  before(async () => {
    t = await createTestApp();
    await createUser(t, email);
    web = await createClient(t, { name: 'Web', callback_urls: [CALLBACK], allowed_origins: [SHOP], token_endpoint_auth_method: 'client_secret_basic' });
    spa = await createClient(t, { name: 'SPA', callback_urls: [CALLBACK], allowed_origins: [SHOP], token_endpoint_auth_method: 'none' });
  });
  after(() => t?.close());

  const query = (url: string) => url.slice(url.indexOf('?') + 1);

  describe('POST /oauth/authorize (OpenID Connect Core 3.1.2.1)', () => {
    it('renders the sign-in page as GET does, and the posted sign-in gives a code', async () => {
      const a = authorizeRequest(web.client_id, CALLBACK);
      const page = await t.app.inject({ method: 'POST', url: '/oauth/authorize', headers: FORM, payload: query(a.url) });
      assert.equal(page.statusCode, 200, page.body);
      const form = hiddenFields(page.body);
      assert.equal(form.get('client_id'), web.client_id);
      assert.equal(form.get('state'), a.state);
      form.set('email', email);
      form.set('password', PASSWORD);
      const res = await t.app.inject({ method: 'POST', url: '/oauth/authorize/login', headers: { ...FORM, cookie: cookieOf(page, 'payd_idp_csrf')! }, payload: form.toString() });
      assert.equal(res.statusCode, 303, res.body);
      assert.ok(new URL(String(res.headers.location)).searchParams.get('code'));
    });

    it('validates as GET does: an error goes back to a valid redirect URI, a bad redirect URI gets the error page', async () => {
      const a = authorizeRequest(web.client_id, CALLBACK, { scope: 'openid admin' });
      const res = await t.app.inject({ method: 'POST', url: '/oauth/authorize', headers: FORM, payload: query(a.url) });
      assert.equal(res.statusCode, 303);
      const back = new URL(String(res.headers.location));
      assert.equal(back.searchParams.get('error'), 'invalid_scope');
      assert.equal(back.searchParams.get('state'), a.state);
      const bad = authorizeRequest(web.client_id, 'https://attacker.example/cb');
      const page = await t.app.inject({ method: 'POST', url: '/oauth/authorize', headers: FORM, payload: query(bad.url) });
      assert.equal(page.statusCode, 400);
      assert.equal(page.headers.location, undefined);
      assert.match(page.body, /redirect_uri/);
    });

    it('a signed-in browser gets its code at once (prompt=none), as with GET', async () => {
      const { session } = await codeFor(t.app, web, CALLBACK, email);
      const a = authorizeRequest(web.client_id, CALLBACK, { prompt: 'none' });
      const res = await t.app.inject({ method: 'POST', url: '/oauth/authorize', headers: { ...FORM, cookie: session }, payload: query(a.url) });
      assert.equal(res.statusCode, 303, res.body);
      assert.ok(new URL(String(res.headers.location)).searchParams.get('code'));
    });

    it('a body that is not form-encoded is refused with a page naming the content type', async () => {
      const res = await t.app.inject({ method: 'POST', url: '/oauth/authorize', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ client_id: web.client_id }) });
      assert.equal(res.statusCode, 400);
      assert.match(res.body, /application\/x-www-form-urlencoded/);
    });
  });

  describe('request and request_uri (OpenID Connect Core 6.1, 6.2)', () => {
    for (const [param, error] of [['request', 'request_not_supported'], ['request_uri', 'request_uri_not_supported']] as const) {
      it(`${param}: ${error} to a valid redirect URI, with state; an error page otherwise`, async () => {
        const a = authorizeRequest(web.client_id, CALLBACK, { [param]: param === 'request' ? 'eyJhbGciOiJub25lIn0.e30.' : 'https://rp.example/request.jwt' });
        const res = await t.app.inject({ url: a.url });
        assert.equal(res.statusCode, 303, res.body);
        const back = new URL(String(res.headers.location));
        assert.equal(back.searchParams.get('error'), error);
        assert.equal(back.searchParams.get('state'), a.state);
        assert.equal(back.searchParams.get('code'), null);
        const bad = authorizeRequest(web.client_id, 'https://attacker.example/cb', { [param]: 'x' });
        const page = await t.app.inject({ url: bad.url });
        assert.equal(page.statusCode, 400);
        assert.equal(page.headers.location, undefined);
      });
    }
  });

  describe('the password grant: off by default, never for public clients', () => {
    const grant = (c: Client, auth: Record<string, string>) => t.app.inject({
      method: 'POST', url: '/oauth/token', headers: { ...FORM, ...auth },
      payload: new URLSearchParams({ grant_type: 'password', username: email, password: PASSWORD, ...(auth.authorization ? {} : { client_id: c.client_id }) }).toString(),
    });

    it('a first-party confidential application without the opt-in: unauthorized_client', async () => {
      expectOAuthError(await grant(web, basic(web)), 400, 'unauthorized_client');
    });

    it('a public client: unauthorized_client, and it cannot be registered with grant_types password', async () => {
      expectOAuthError(await grant(spa, {}), 400, 'unauthorized_client');
      // Even with the opt-in recorded (a public application made another way): refused.
      await t.testDb.db.query('INSERT INTO idp_password_grant_clients (client_id) VALUES ($1)', [spa.client_id]);
      expectOAuthError(await grant(spa, {}), 400, 'unauthorized_client');
      const res = await t.app.inject({
        method: 'POST', url: '/admin/v1/identity/applications', headers: t.adminHeaders,
        payload: { name: 'Public', callback_urls: [CALLBACK], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'password'] },
      });
      const p = expectProblem(res, 400);
      assert.equal(p.invalid_params?.[0]?.name, 'grant_types');
    });

    it('an application registered with grant_types password gets tokens', async () => {
      const own = await createClient(t, { name: 'Own', callback_urls: [CALLBACK], grant_types: ['authorization_code', 'password'] });
      assert.deepEqual(own.grant_types, ['authorization_code', 'refresh_token', 'password']);
      // Reading the application says it too (the Management API's view).
      const mgmt = await createClient(t, { name: 'Reader', callback_urls: [CALLBACK], management_scopes: ['read:clients'] });
      const token = (await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(mgmt) }, payload: 'grant_type=client_credentials' })).json().access_token;
      const read = async (id: string) => {
        const res = await t.app.inject({ url: `/api/v2/clients/${id}`, headers: { authorization: `Bearer ${token}` } });
        assert.equal(res.statusCode, 200, res.body);
        return res.json().grant_types;
      };
      assert.deepEqual(await read(own.client_id), ['authorization_code', 'refresh_token', 'password']);
      assert.deepEqual(await read(web.client_id), ['authorization_code', 'refresh_token']);
      const res = await grant(own, basic(own));
      assert.equal(res.statusCode, 200, res.body);
      assert.ok(res.json().access_token);
    });
  });

  describe('CORS credentials', () => {
    it('discovery, JWKS and /userinfo: the Allowed Origin but no credentials; the SDK API keeps credentialed CORS', async () => {
      for (const url of ['/.well-known/openid-configuration', '/.well-known/jwks.json', '/userinfo']) {
        const res = await t.app.inject({ url, headers: { origin: SHOP } });
        assert.equal(res.headers['access-control-allow-origin'], SHOP, url);
        assert.equal(res.headers['access-control-allow-credentials'], undefined, url);
        const pre = await t.app.inject({ method: 'OPTIONS', url, headers: { origin: SHOP, 'access-control-request-method': 'GET' } });
        assert.equal(pre.statusCode, 204, url);
        assert.equal(pre.headers['access-control-allow-credentials'], undefined, url);
      }
      const sdk = await t.app.inject({ url: `/identity/v1/config?client_id=${spa.client_id}`, headers: { origin: SHOP } });
      assert.equal(sdk.headers['access-control-allow-credentials'], 'true');
    });
  });

  describe('POST /oauth/revoke', () => {
    it('answers 200 with {} as application/json (the SDK parses the answer)', async () => {
      const res = await t.app.inject({ method: 'POST', url: '/oauth/revoke', headers: { ...FORM, ...basic(web) }, payload: 'token=not-a-token' });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^application\/json/);
      assert.deepEqual(res.json(), {});
    });
  });

  describe('id_token: at_hash, sid, azp', () => {
    it('carries azp (the client), at_hash of the access token, and the same sid for every code of one sign-in session', async () => {
      const first = await codeFor(t.app, web, CALLBACK, email);
      const tokens = (await exchange(t.app, web, first.code, CALLBACK, first.verifier)).json();
      const claims = decodeJwt(tokens.id_token);
      assert.equal(claims.azp, web.client_id);
      const digest = createHash('sha256').update(tokens.access_token).digest();
      assert.equal(claims.at_hash, digest.subarray(0, 16).toString('base64url'));
      assert.equal(typeof claims.sid, 'string');
      // The same session, another authorization: the same sid.
      const a = authorizeRequest(web.client_id, CALLBACK);
      const again = await t.app.inject({ url: a.url, headers: { cookie: first.session } });
      assert.equal(again.statusCode, 303, again.body);
      const code = new URL(String(again.headers.location)).searchParams.get('code')!;
      const second = decodeJwt((await exchange(t.app, web, code, CALLBACK, a.verifier)).json().id_token);
      assert.equal(second.sid, claims.sid);
      // Another sign-in session: another sid.
      const other = await codeFor(t.app, web, CALLBACK, email);
      const third = decodeJwt((await exchange(t.app, web, other.code, CALLBACK, other.verifier)).json().id_token);
      assert.notEqual(third.sid, claims.sid);
    });
  });

  describe('over http', () => {
    it('no Strict-Transport-Security; the session cookie is SameSite=Lax', async () => {
      const res = await t.app.inject({ url: '/.well-known/openid-configuration' });
      assert.equal(res.headers['strict-transport-security'], undefined);
      const a = authorizeRequest(web.client_id, CALLBACK);
      const signedIn = await signIn(t.app, a.url, { email, password: PASSWORD });
      const set = ([] as string[]).concat(signedIn.headers['set-cookie'] ?? []).filter((c) => c.startsWith('payd_idp_session='));
      assert.ok(set.length > 0);
      for (const c of set) assert.match(c, /SameSite=Lax/);
    });
  });
});

describe('identity provider served over https', () => {
  let t: TestApp;
  let web: Client;
  before(async () => {
    t = await createTestApp({ baseUrl: 'https://id.example' });
    await createUser(t, 'ada@example.com');
    web = await createClient(t, { name: 'Web', callback_urls: [CALLBACK] });
  });
  after(() => t?.close());

  it('Strict-Transport-Security on every answer: pages, APIs, errors and 404s', async () => {
    for (const url of ['/.well-known/openid-configuration', '/oauth/authorize', '/no/such/path', '/healthz']) {
      const res = await t.app.inject({ url });
      assert.equal(res.headers['strict-transport-security'], 'max-age=31536000', url);
    }
  });

  it('the session cookie is SameSite=None; Secure (the SDK reads it cross-site); the CSRF cookie stays Lax', async () => {
    const a = authorizeRequest(web.client_id, CALLBACK);
    const page = await t.app.inject({ url: a.url });
    const csrfCookie = String(([] as string[]).concat(page.headers['set-cookie'] ?? []).find((c) => c.startsWith('payd_idp_csrf=')));
    assert.match(csrfCookie, /SameSite=Lax/);
    assert.match(csrfCookie, /Secure/);
    const signedIn = await signIn(t.app, a.url, { email: 'ada@example.com', password: PASSWORD });
    assert.equal(signedIn.statusCode, 303, signedIn.body);
    const set = ([] as string[]).concat(signedIn.headers['set-cookie'] ?? []).filter((c) => c.startsWith('payd_idp_session='));
    assert.equal(set.length, 2);
    for (const c of set) {
      assert.match(c, /SameSite=None/);
      assert.match(c, /Secure/);
      assert.match(c, /HttpOnly/);
    }
  });
});
