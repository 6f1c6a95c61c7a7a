// Management API: deleting an application (delete:clients; built-in ones refused; its
// codes, tokens and consents go; audited) and granting or withdrawing console
// administration (is_admin, scope update:admins; never the last administrator).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectOAuthError, expectProblem, type TestApp } from '../helpers/app.ts';
import { type Client, FORM, authorizeRequest, basic, codeFor, count, createClient, createUser, exchange } from './idp-helpers.ts';

const CB = 'https://shop.example/cb';

describe('Management API: deleting applications, administrators', () => {
  let t: TestApp;
  let mgmt: Client;
  let token: string;

  const tokenFor = async (c: Client, scope?: string) => {
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(c) }, payload: new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) }).toString() });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().access_token as string;
  };
  const api = (method: 'GET' | 'PATCH' | 'DELETE', url: string, payload?: object, bearer = token) =>
    t.app.inject({ method, url, headers: { authorization: `Bearer ${bearer}` }, ...(payload ? { payload } : {}) });

  before(async () => {
    t = await createTestApp();
    mgmt = await createClient(t, {
      name: 'Back office', callback_urls: ['https://bo.example/cb'],
      // manage:all_clients: it deletes applications the operator registered.
      management_scopes: ['read:clients', 'update:clients', 'delete:clients', 'manage:all_clients', 'read:users', 'update:users', 'update:admins'],
    });
    token = await tokenFor(mgmt);
  });
  after(() => t.close());

  describe('DELETE /api/v2/clients/{id}', () => {
    it('needs delete:clients; refuses the built-in console (403) and an unknown application (404)', async () => {
      const shop = await createClient(t, { name: 'Shop', callback_urls: [CB] });
      expectProblem(await api('DELETE', `/api/v2/clients/${shop.client_id}`, undefined, await tokenFor(mgmt, 'update:clients read:clients')), 403);
      const console = await api('DELETE', '/api/v2/clients/payd-console');
      assert.match(String(expectProblem(console, 403).detail), /built into payd/);
      assert.equal((await api('GET', '/api/v2/clients/payd-console')).statusCode, 200, 'the console stays');
      expectProblem(await api('DELETE', '/api/v2/clients/no-such-client'), 404);
      assert.equal((await api('GET', `/api/v2/clients/${shop.client_id}`)).statusCode, 200, 'nothing deleted');
    });

    it('revokes the application\'s tokens and burns its codes; it is unknown from then on; the deletion is audited', async () => {
      await createUser(t, 'ada@example.com');
      const shop = await createClient(t, { name: 'Shop', callback_urls: [CB] });
      const first = await codeFor(t.app, shop, CB, 'ada@example.com');
      const tokens = await t.app.inject({
        method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(shop) },
        payload: new URLSearchParams({ grant_type: 'authorization_code', code: first.code, redirect_uri: CB, code_verifier: first.verifier }).toString(),
      });
      assert.equal(tokens.statusCode, 200, tokens.body);
      const access = tokens.json().access_token as string;
      const pending = await codeFor(t.app, shop, CB, 'ada@example.com');
      assert.equal((await t.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${access}` } })).statusCode, 200);

      const res = await api('DELETE', `/api/v2/clients/${shop.client_id}`);
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.body, '');

      assert.equal((await t.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${access}` } })).statusCode, 401, 'access token revoked');
      expectOAuthError(await exchange(t.app, shop, pending.code, CB, pending.verifier), 401, 'invalid_client');
      assert.equal(await count(t, 'SELECT count(*)::int AS n FROM idp_codes WHERE client_id = $1 AND used_at IS NULL', [shop.client_id]), 0, 'codes burnt');
      assert.equal(await count(t, 'SELECT count(*)::int AS n FROM idp_tokens WHERE client_id = $1 AND revoked_at IS NULL', [shop.client_id]), 0);
      expectProblem(await api('GET', `/api/v2/clients/${shop.client_id}`), 404);
      assert.ok(!(await api('GET', '/api/v2/clients')).json().some((c: { client_id: string }) => c.client_id === shop.client_id), 'not listed');
      const signIn = await t.app.inject({ url: authorizeRequest(shop.client_id, CB).url });
      assert.equal(signIn.statusCode, 400, 'no sign-in for a deleted application');
      assert.equal(signIn.headers.location, undefined);
      expectProblem(await api('DELETE', `/api/v2/clients/${shop.client_id}`), 404);

      const audit = await api('GET', `/api/v2/clients/${shop.client_id}/audit`);
      assert.equal(audit.statusCode, 200, 'the audit of a deleted application stays readable');
      assert.equal(audit.json()[0].action, 'delete');
      assert.equal(audit.json()[0].actor, `management:${mgmt.client_id}`);
    });

    it('deleting a Management API application refuses its tokens at once', async () => {
      const other = await createClient(t, { name: 'Other back office', callback_urls: ['https://bo2.example/cb'], management_scopes: ['read:clients'] });
      const otherToken = await tokenFor(other);
      assert.equal((await api('GET', '/api/v2/clients', undefined, otherToken)).statusCode, 200);
      assert.equal((await api('DELETE', `/api/v2/clients/${other.client_id}`)).statusCode, 204);
      expectProblem(await api('GET', '/api/v2/clients', undefined, otherToken), 401);
      const again = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(other) }, payload: 'grant_type=client_credentials' });
      expectOAuthError(again, 401, 'invalid_client');
    });
  });

  describe('console administrators (PATCH /api/v2/users/{id} is_admin)', () => {
    it('needs update:admins besides update:users; shows is_admin', async () => {
      const u = await createUser(t, 'grace@example.com');
      const plain = await tokenFor(mgmt, 'update:users read:users');
      expectProblem(await api('PATCH', `/api/v2/users/${u.id}`, { is_admin: true }, plain), 403);
      assert.equal((await api('GET', `/api/v2/users/${u.id}`)).json().is_admin, false);
      const made = await api('PATCH', `/api/v2/users/${u.id}`, { is_admin: true });
      assert.equal(made.statusCode, 200, made.body);
      assert.equal(made.json().is_admin, true);
      expectProblem(await api('PATCH', `/api/v2/users/${u.id}`, { is_admin: 'yes' }), 400);
    });

    it('refuses withdrawing or blocking the last administrator (409); another one first, then it works', async () => {
      await t.testDb.db.query('UPDATE idp_users SET is_admin = false');
      const a = await createUser(t, 'root@example.com', { is_admin: true });
      const b = await createUser(t, 'second@example.com');
      const last = expectProblem(await api('PATCH', `/api/v2/users/${a.id}`, { is_admin: false }), 409);
      assert.match(String(last.detail), /last administrator/);
      expectProblem(await api('PATCH', `/api/v2/users/${a.id}`, { blocked: true }), 409);
      assert.equal((await api('GET', `/api/v2/users/${a.id}`)).json().is_admin, true, 'unchanged');
      assert.equal((await api('GET', `/api/v2/users/${a.id}`)).json().blocked, false, 'not blocked');

      assert.equal((await api('PATCH', `/api/v2/users/${b.id}`, { is_admin: true })).statusCode, 200);
      assert.equal((await api('PATCH', `/api/v2/users/${a.id}`, { is_admin: false })).statusCode, 200);
      expectProblem(await api('PATCH', `/api/v2/users/${b.id}`, { is_admin: false }), 409);
      assert.equal((await api('PATCH', `/api/v2/users/${a.id}`, { is_admin: false })).statusCode, 200, 'withdrawing from a non-administrator changes nothing');
    });

    it('two concurrent withdrawals of the last two administrators: one passes, one is 409', async () => {
      await t.testDb.db.query('UPDATE idp_users SET is_admin = false');
      const a = await createUser(t, 'c1@example.com', { is_admin: true });
      const b = await createUser(t, 'c2@example.com', { is_admin: true });
      const results = await Promise.all([a, b].map((u) => api('PATCH', `/api/v2/users/${u.id}`, { is_admin: false })));
      assert.deepEqual(results.map((r) => r.statusCode).sort(), [200, 409]);
      assert.equal(await count(t, 'SELECT count(*)::int AS n FROM idp_users WHERE is_admin'), 1);
    });
  });
});
