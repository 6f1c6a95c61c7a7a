// The Management API and login-as: tokens from an application's client credentials with
// management scopes, scope checks, users (create, read, update, block), login-as with
// code and token, its refusals, the login-as-name claim, and the user events; then
// secret rotation and listing of applications, tokens that are not management tokens,
// scopes withdrawn from an application, registration checks, and login-as with the
// global configuration (PAYD_IDENTITY_LOGIN_AS_*).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { decodeJwt } from '../../src/platform/crypto/jwt.ts';
import { MASTER_KEY, createTestApp, expectOAuthError, expectProblem, type TestApp } from '../helpers/app.ts';
import { type Client, FORM, basic, codeFor, count, createClient, createUser, exchange } from './idp-helpers.ts';

const CB = 'https://support.example/callback';
const form = { 'content-type': 'application/x-www-form-urlencoded' };

describe('identity Management API and login-as', () => {
  let t: TestApp;
  let mgmt: { client_id: string; client_secret: string };
  let firstParty: { client_id: string; client_secret: string };
  let userId: string;
  let token: string;

  before(async () => {
    t = await createTestApp();
    const post = async (url: string, payload: object) => {
      const res = await t.app.inject({ method: 'POST', url, headers: t.adminHeaders, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    };
    mgmt = await post('/admin/v1/identity/applications', {
      name: 'Back office', callback_urls: ['https://bo.example/cb'], token_endpoint_auth_method: 'client_secret_post',
      management_scopes: ['read:users', 'create:users', 'update:users', 'read:user_events', 'login_as:users', 'create:clients', 'read:clients', 'update:clients'],
    });
    firstParty = await post('/admin/v1/identity/applications', {
      name: 'Support app', callback_urls: [CB], allowed_origins: ['https://support.example', 'http://payd.test'], first_party: true, response_types: ['code', 'token'],
      token_endpoint_auth_method: 'client_secret_post',
    });
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: form, payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: mgmt.client_id, client_secret: mgmt.client_secret }).toString() });
    assert.equal(res.statusCode, 200, res.body);
    token = res.json().access_token;
  });
  after(() => t.close());

  const api = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object, bearer = token) =>
    t.app.inject({ method, url, headers: { authorization: `Bearer ${bearer}` }, ...(payload ? { payload } : {}) });

  it('creates, reads, updates and blocks users with the right scopes; refuses without them', async () => {
    const created = await api('POST', '/api/v2/users', { email: 'lin@example.com', password: 'a long enough password', given_name: 'Lin' });
    assert.equal(created.statusCode, 201, created.body);
    userId = created.json().id;
    assert.equal((await api('GET', `/api/v2/users/${userId}`)).json().given_name, 'Lin');
    const patched = await api('PATCH', `/api/v2/users/${userId}`, { family_name: 'Wei', email_verified: true });
    assert.equal(patched.json().family_name, 'Wei');
    expectProblem(await api('PATCH', `/api/v2/users/${userId}`, { email: 'x@example.com' }), 400);
    expectProblem(await api('GET', '/api/v2/users/00000000-0000-4000-8000-000000000000'), 404);
    expectProblem(await t.app.inject({ url: '/api/v2/users' }), 401);
    expectProblem(await api('GET', '/api/v2/users', undefined, 'not-a-token'), 401);
    const narrow = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: form, payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: mgmt.client_id, client_secret: mgmt.client_secret, scope: 'read:users' }).toString() });
    expectProblem(await api('PATCH', `/api/v2/users/${userId}`, { blocked: true }, narrow.json().access_token), 403);
    const wrongSecret = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: form, payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: mgmt.client_id, client_secret: 'nope' }).toString() });
    assert.equal(wrongSecret.statusCode, 401);
    const noScopes = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: form, payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: firstParty.client_id, client_secret: firstParty.client_secret }).toString() });
    assert.equal(noScopes.json().error, 'unauthorized_client');
  });

  it('registers and updates applications (Allowed Callback URLs and Origins) through the Management API', async () => {
    const created = await api('POST', '/api/v2/clients', { name: 'Mobile', callback_urls: ['https://m.example/cb'] });
    assert.equal(created.statusCode, 201, created.body);
    assert.ok(created.json().client_secret, 'shown once');
    const id = created.json().client_id;
    const got = await api('GET', `/api/v2/clients/${id}`);
    assert.equal(got.json().client_secret, undefined, 'never shown again');
    const patched = await api('PATCH', `/api/v2/clients/${id}`, { callback_urls: ['https://m.example/cb', 'https://m.example/cb2'], allowed_origins: ['https://m.example'] });
    assert.deepEqual(patched.json().callback_urls, ['https://m.example/cb', 'https://m.example/cb2']);
    const bad = expectProblem(await api('PATCH', `/api/v2/clients/${id}`, { allowed_origins: ['https://m.example/path'] }), 400);
    assert.equal(bad.invalid_params?.[0]?.name, 'allowed_origins[0]');
    expectProblem(await api('PATCH', `/api/v2/clients/${id}`, { callback_urls: ['https://m.example/cb#frag'] }), 400);
    assert.deepEqual((await api('GET', `/api/v2/clients/${id}`)).json().allowed_origins, ['https://m.example'], 'refused patches changed nothing');
    expectProblem(await api('GET', '/api/v2/clients/nope'), 404);
  });

  it('logs in as a user with code: the exchanged token carries login-as-name; the event shows in the user\'s activity', async () => {
    const q = new URLSearchParams({ client_id: firstParty.client_id, redirect_uri: CB, response_type: 'code', name: 'agent-007' });
    const res = await api('GET', `/api/v2/users/${userId}/login-as?${q}`);
    assert.equal(res.statusCode, 200, res.body);
    const url = new URL(res.json().redirect_url);
    assert.equal(`${url.origin}${url.pathname}`, CB);
    const code = url.searchParams.get('code')!;
    const exchanged = await t.app.inject({
      method: 'POST', url: '/oauth/token', headers: form,
      payload: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CB, client_id: firstParty.client_id, client_secret: firstParty.client_secret }).toString(),
    });
    assert.equal(exchanged.statusCode, 200, exchanged.body);
    const claims = decodeJwt(exchanged.json().access_token).payload;
    assert.equal(claims.sub, userId);
    assert.equal(claims['http://payd.test/claims/login-as-name'], 'agent-007');
    const events = (await api('GET', `/api/v2/users/${userId}/events`)).json();
    assert.equal(events[0].type, 'login');
    assert.equal(events[0].auth_type, 'login_as');
    assert.equal(events[0].login_as_profile_id, 'agent-007');
    assert.equal(events[0].user_id, userId);
    assert.ok(events[0].id && events[0].date);
  });

  it('logs in as a user with token (query string), only on clients that allow it', async () => {
    const q = new URLSearchParams({ client_id: firstParty.client_id, redirect_uri: CB, response_type: 'token', name: 'agent-008' });
    const url = new URL((await api('GET', `/api/v2/users/${userId}/login-as?${q}`)).json().redirect_url);
    const at = url.searchParams.get('access_token')!;
    assert.equal(decodeJwt(at).payload['http://payd.test/claims/login-as-name'], 'agent-008');
    const info = await t.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${at}` } });
    assert.equal(info.json().sub, userId);
  });

  it('refuses login-as for a URL not whitelisted, an origin not allowed, a third-party client, token where not allowed, a blocked user', async () => {
    const tokensBefore = (await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM idp_tokens')).rows[0]!.n;
    const codesBefore = (await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM idp_codes')).rows[0]!.n;
    const noToken = await t.app.inject({ method: 'POST', url: '/admin/v1/identity/applications', headers: t.adminHeaders, payload: {
      name: 'No origins', callback_urls: ['https://other.example/cb'], allowed_origins: ['http://payd.test'], first_party: true,
    } });
    const thirdParty = await t.app.inject({ method: 'POST', url: '/admin/v1/identity/applications', headers: t.adminHeaders, payload: {
      name: 'Third party', callback_urls: [CB], allowed_origins: ['https://support.example', 'http://payd.test'], first_party: false,
    } });
    const cases: Array<[Record<string, string>, string]> = [
      [{ client_id: firstParty.client_id, redirect_uri: 'https://support.example/other' }, 'redirect_uri'],
      [{ client_id: noToken.json().client_id, redirect_uri: 'https://other.example/cb' }, 'redirect_uri'],
      [{ client_id: thirdParty.json().client_id, redirect_uri: CB }, 'client_id'],
      [{ client_id: noToken.json().client_id, redirect_uri: 'https://other.example/cb', response_type: 'token' }, 'redirect_uri'],
    ];
    for (const [params, field] of cases) {
      const res = await api('GET', `/api/v2/users/${userId}/login-as?${new URLSearchParams(params)}`);
      const p = expectProblem(res, 400);
      assert.equal(p.invalid_params?.[0]?.name, field, JSON.stringify(p));
    }
    await api('PATCH', `/api/v2/users/${userId}`, { blocked: true });
    expectProblem(await api('GET', `/api/v2/users/${userId}/login-as?${new URLSearchParams({ client_id: firstParty.client_id, redirect_uri: CB })}`), 400);
    assert.equal((await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM idp_tokens')).rows[0]!.n, tokensBefore);
    assert.equal((await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM idp_codes')).rows[0]!.n, codesBefore);
  });
});

const ALL = ['read:users', 'create:users', 'update:users', 'read:user_events', 'login_as:users', 'read:clients', 'create:clients', 'update:clients'];

describe('identity Management API: applications, token checks, global login-as', () => {
  let t: TestApp;
  let mgmt: Client;
  let support: Client;
  let userId: string;

  const tokenOf = async (app: FastifyInstance, c: Client, scope?: string) => {
    const res = await app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(c) }, payload: new URLSearchParams({
      grant_type: 'client_credentials', ...(scope ? { scope } : {}),
    }).toString() });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().access_token as string;
  };
  const api = async (method: 'GET' | 'POST' | 'PATCH', url: string, bearer?: string, app = t.app) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${bearer ?? await tokenOf(t.app, mgmt)}` } });

  before(async () => {
    t = await createTestApp();
    mgmt = await createClient(t, { name: 'Back office', callback_urls: ['https://bo.example/cb'], management_scopes: ALL });
    support = await createClient(t, {
      name: 'Support', callback_urls: [CB], allowed_origins: ['https://support.example', 'http://payd.test'], first_party: true, response_types: ['code', 'token'],
    });
    userId = (await createUser(t, 'lin@example.com')).id;
  });
  after(() => t.close());

  it('lists applications without secrets and rotates a secret (update:clients), shown once', async () => {
    const list = await api('GET', '/api/v2/clients');
    assert.equal(list.statusCode, 200, list.body);
    assert.ok(list.json().some((c: { client_id: string }) => c.client_id === support.client_id));
    assert.doesNotMatch(list.body, /secret_hash|secret_enc|"client_secret"/);
    const readOnly = await tokenOf(t.app, mgmt, 'read:clients');
    // Support was registered by the operator: its secret is out of the back office's reach.
    assert.match(String(expectProblem(await api('POST', `/api/v2/clients/${support.client_id}/rotate-secret`), 403).detail), /not registered by the caller/);
    const register = async (payload: object) => {
      const res = await t.app.inject({ method: 'POST', url: '/api/v2/clients', headers: { authorization: `Bearer ${await tokenOf(t.app, mgmt)}` }, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json() as Client;
    };
    let tools = await register({ name: 'Support tools', callback_urls: [CB] });
    expectProblem(await api('POST', `/api/v2/clients/${tools.client_id}/rotate-secret`, readOnly), 403);
    const rotated = await api('POST', `/api/v2/clients/${tools.client_id}/rotate-secret`);
    assert.equal(rotated.statusCode, 200, rotated.body);
    const secret = rotated.json().client_secret as string;
    assert.ok(Buffer.from(secret, 'base64url').length >= 32);
    assert.equal((await api('GET', `/api/v2/clients/${tools.client_id}`)).json().client_secret, undefined);
    assert.equal(await count(t, 'SELECT count(*)::int AS n FROM idp_applications WHERE secret_enc LIKE $1 OR secret_hash = $1', [`%${secret}%`]), 0, 'stored hashed and encrypted only');
    const intro = (c: Client) => t.app.inject({ method: 'POST', url: '/oauth/introspect', headers: { ...FORM, ...basic(c) }, payload: 'token=x' });
    assert.equal((await intro(tools)).statusCode, 401, 'the old secret is refused at once');
    tools = { client_id: tools.client_id, client_secret: secret };
    assert.equal((await intro(tools)).statusCode, 200);
    const spa = await register({ name: 'SPA', callback_urls: [CB], token_endpoint_auth_method: 'none' });
    expectProblem(await api('POST', `/api/v2/clients/${spa.client_id}/rotate-secret`), 400);
    expectProblem(await api('POST', '/api/v2/clients/nope/rotate-secret'), 404);
  });

  it('refuses callback URLs that are not https (but localhost), and management scopes on a public client', async () => {
    for (const [payload, field] of [
      [{ name: 'x', callback_urls: ['http://shop.example/cb'] }, 'callback_urls[0]'],
      [{ name: 'x', callback_urls: ['javascript:alert(1)'] }, 'callback_urls[0]'],
      [{ name: 'x', callback_urls: ['https://a.example/cb'], token_endpoint_auth_method: 'none', management_scopes: ['read:users'] }, 'management_scopes'],
    ] as const) {
      const res = await t.app.inject({ method: 'POST', url: '/admin/v1/identity/applications', headers: t.adminHeaders, payload });
      assert.equal(expectProblem(res, 400).invalid_params?.[0]?.name, field);
    }
    await createClient(t, { name: 'dev', callback_urls: ['http://localhost:5173/cb'] });
  });

  it('a user access token, a forged or a withdrawn-scope token does not open the Management API', async () => {
    await createUser(t, 'ada@example.com');
    const { code, verifier } = await codeFor(t.app, support, CB, 'ada@example.com');
    const userToken = (await exchange(t.app, support, code, CB, verifier)).json().access_token;
    expectProblem(await api('GET', '/api/v2/users', userToken), 401);
    const management = await tokenOf(t.app, mgmt);
    expectOAuthError(await t.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${management}` } }), 401, 'invalid_token');
    const [h, p, s] = management.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), scope: ALL.join(' ') + ' admin' })).toString('base64url')}.${s}`;
    expectProblem(await api('GET', '/api/v2/users', forged), 401);
    await t.testDb.db.query(`UPDATE idp_applications SET management_scopes = '["read:clients"]' WHERE client_id = $1`, [mgmt.client_id]);
    try {
      expectProblem(await api('GET', '/api/v2/users', management), 403);
      assert.equal((await api('GET', '/api/v2/clients', management)).statusCode, 200);
    } finally {
      await t.testDb.db.query('UPDATE idp_applications SET management_scopes = $2 WHERE client_id = $1', [mgmt.client_id, JSON.stringify(ALL)]);
    }
  });

  it('finds a user by email, case-insensitively (read:users)', async () => {
    const found = await api('GET', '/api/v2/users?email=LIN%40example.com');
    assert.deepEqual(found.json().map((u: { id: string }) => u.id), [userId]);
    assert.deepEqual((await api('GET', '/api/v2/users?email=none%40example.com')).json(), []);
  });

  it('refuses client credentials sent twice (Basic and form)', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/oauth/introspect', headers: { ...FORM, ...basic(support) }, payload: new URLSearchParams({ token: 'x', client_secret: support.client_secret }).toString() });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error, 'invalid_request');
  });

  it('login-as with the global configuration when the call names no client; refusals name the parameter', async () => {
    const noGlobal = expectProblem(await api('GET', `/api/v2/users/${userId}/login-as?name=agent`), 400);
    assert.equal(noGlobal.invalid_params?.[0]?.name, 'client_id');
    const noRedirect = expectProblem(await api('GET', `/api/v2/users/${userId}/login-as?client_id=${support.client_id}`), 400);
    assert.equal(noRedirect.invalid_params?.[0]?.name, 'redirect_uri');

    const config = { ...t.config, identityLoginAsClientId: support.client_id, identityLoginAsRedirectUri: CB, identityLoginAsResponseType: 'token' as const };
    const global = await buildApp({ config, db: t.testDb.db, masterKey: MASTER_KEY, logger: false });
    await global.ready();
    try {
      const res = await api('GET', `/api/v2/users/${userId}/login-as?name=agent-9`, undefined, global);
      assert.equal(res.statusCode, 200, res.body);
      const url = new URL(res.json().redirect_url);
      assert.equal(`${url.origin}${url.pathname}`, CB);
      const info = await global.inject({ url: '/userinfo', headers: { authorization: `Bearer ${url.searchParams.get('access_token')}` } });
      assert.equal(info.json().sub, userId);
      const events = (await api('GET', `/api/v2/users/${userId}/events`, undefined, global)).json();
      assert.deepEqual([events[0].auth_type, events[0].login_as_profile_id], ['login_as', 'agent-9']);
    } finally {
      await global.close();
    }
  });

  it('login-as with code refuses a public client (its codes need PKCE); nothing issued', async () => {
    const spa = await createClient(t, {
      name: 'Support SPA', callback_urls: [CB], allowed_origins: ['https://support.example', 'http://payd.test'], first_party: true, token_endpoint_auth_method: 'none',
    });
    const codes = await count(t, 'SELECT count(*)::int AS n FROM idp_codes');
    const res = await api('GET', `/api/v2/users/${userId}/login-as?${new URLSearchParams({ client_id: spa.client_id, redirect_uri: CB, response_type: 'code' })}`);
    assert.equal(expectProblem(res, 400).invalid_params?.[0]?.name, 'response_type');
    assert.equal(await count(t, 'SELECT count(*)::int AS n FROM idp_codes'), codes);
  });
});
