// The Management API and login-as: tokens from an application's client credentials with
// management scopes, scope checks, users (create, read, update, block), login-as with
// code and token, its refusals, the login-as-name claim, and the user events.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from '../../src/platform/crypto/compact-jws.ts';
import { createTestApp, expectProblem, type TestApp } from '../helpers/app.ts';

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
