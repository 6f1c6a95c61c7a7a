// Identity security (issue 14): item 6, "a Management API client with update:clients can
// rewrite the built-in console client and capture an administrator's login. Built-in
// clients are not editable through the Management API; changing callback URLs of any
// client is an audited event"; item 10, "management tokens cannot be revoked"; item 11,
// "limit refused on /api/v2/users and /api/v2/clients".
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type TestApp } from '../helpers/app.ts';

const form = { 'content-type': 'application/x-www-form-urlencoded' };

describe('applications: built-in ones protected, changes audited, tokens revocable', () => {
  let t: TestApp;
  let mgmt: { client_id: string; client_secret: string };
  let shop: { client_id: string };
  let token: string;

  const tokenFor = async (c: { client_id: string; client_secret: string }) => {
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: form, payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret }).toString() });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().access_token as string;
  };
  const api = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object, bearer = token) =>
    t.app.inject({ method, url, headers: { authorization: `Bearer ${bearer}` }, ...(payload ? { payload } : {}) });

  before(async () => {
    t = await createTestApp();
    const post = async (payload: object) => {
      const res = await t.app.inject({ method: 'POST', url: '/admin/v1/identity/applications', headers: t.adminHeaders, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    };
    mgmt = await post({ name: 'Back office', callback_urls: ['https://bo.example/cb'], management_scopes: ['read:clients', 'create:clients', 'update:clients', 'read:users'], token_endpoint_auth_method: 'client_secret_post' });
    token = await tokenFor(mgmt);
    // Registered by the back office, so its client scopes reach it (docs/identity.md, Who reaches what).
    const registered = await api('POST', '/api/v2/clients', { name: 'Shop', callback_urls: ['https://shop.example/cb'], allowed_origins: ['https://shop.example'] });
    assert.equal(registered.statusCode, 201, registered.body);
    shop = registered.json();
  });
  after(() => t.close());

  it('refuses to change, rotate or revoke the built-in console application through the Management API (403), and it stays as it was', async () => {
    const before = await api('GET', '/api/v2/clients/payd-console');
    assert.equal(before.statusCode, 200, before.body);
    const p = expectProblem(await api('PATCH', '/api/v2/clients/payd-console', { callback_urls: ['https://attacker.example/steal'] }), 403);
    assert.match(String(p.detail), /built into payd/);
    expectProblem(await api('POST', '/api/v2/clients/payd-console/rotate-secret'), 403);
    expectProblem(await api('POST', '/api/v2/clients/payd-console/revoke-tokens'), 403);
    assert.deepEqual((await api('GET', '/api/v2/clients/payd-console')).json(), before.json());
  });

  it('records who changed an application\'s callback URLs and origins, from what to what', async () => {
    const res = await api('PATCH', `/api/v2/clients/${shop.client_id}`, { callback_urls: ['https://shop.example/cb', 'https://shop.example/cb2'] });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await api('PATCH', `/api/v2/clients/${shop.client_id}`, { name: 'Shop' })).statusCode, 200, 'no change: nothing recorded');
    assert.equal((await api('POST', `/api/v2/clients/${shop.client_id}/rotate-secret`)).statusCode, 200);
    const audit = await api('GET', `/api/v2/clients/${shop.client_id}/audit`);
    assert.equal(audit.statusCode, 200, audit.body);
    const entries = audit.json();
    assert.deepEqual(entries.map((e: { action: string }) => e.action), ['rotate_secret', 'update']);
    assert.equal(entries[1].actor, `management:${mgmt.client_id}`);
    assert.deepEqual(entries[1].changes, { callback_urls: { from: ['https://shop.example/cb'], to: ['https://shop.example/cb', 'https://shop.example/cb2'] } });
    expectProblem(await api('GET', `/api/v2/clients/nope/audit`), 404);
  });

  it('revokes an application\'s Management API tokens: the old token is 401 invalid_token, a new one works', async () => {
    const old = await tokenFor(mgmt);
    assert.equal((await api('GET', '/api/v2/clients', undefined, old)).statusCode, 200);
    // No wait between issuing, revoking and issuing again: a token issued in the same second
    // as the revocation, after it, works (the generation decides, not iat's whole seconds).
    const res = await api('POST', `/api/v2/clients/${mgmt.client_id}/revoke-tokens`, undefined, old);
    assert.equal(res.statusCode, 200, res.body);
    const refused = await api('GET', '/api/v2/clients', undefined, old);
    expectProblem(refused, 401);
    assert.match(String(refused.headers['www-authenticate']), /invalid_token/);
    token = await tokenFor(mgmt);
    assert.equal((await api('GET', '/api/v2/clients')).statusCode, 200);
  });

  it('takes limit on /api/v2/users and /api/v2/clients as the query string sends it', async () => {
    const clients = await api('GET', '/api/v2/clients?limit=1');
    assert.equal(clients.statusCode, 200, clients.body);
    assert.equal(clients.json().length, 1);
    assert.equal((await api('GET', '/api/v2/users?limit=5')).statusCode, 200);
    expectProblem(await api('GET', '/api/v2/clients?limit=0'), 400);
    expectProblem(await api('GET', '/api/v2/clients?limit=201'), 400);
  });
});
