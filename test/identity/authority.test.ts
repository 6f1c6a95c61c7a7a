// Who reaches what through the Management API (issue 40, items 1-4): the authority table
// (src/identity/idp/authority.ts, AUTHORITY) walked row by row against the real API, and
// docs/identity.md checked to list every row as the code says it.
// - update:users alone took over a console administrator and a dashboard admin (their
//   password set, then a sign-in);
// - update:clients reached every application (callback URLs, first_party, a rotated
//   secret handed to the caller);
// - login-as recorded whatever `name` the caller passed, not who called.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { AUTHORITY, MANAGEMENT_SCOPES, type ManagementScope } from '../../src/identity/idp/authority.ts';
import { createTestApp, expectProblem, type TestApp } from '../helpers/app.ts';
import { type Client, FORM, PASSWORD, authorizeRequest, basic, createClient, createUser, signIn } from './idp-helpers.ts';

const CB = 'https://support.example/callback';
const ATTACKER_PASSWORD = 'attacker chosen passphrase 7';

describe('Management API authority: every scope reaches what the table says, and nothing else', () => {
  let t: TestApp;
  let admin: { id: string };
  let member: { id: string };
  let plain: { id: string };
  let other: Client;
  let support: Client;

  /** A token of a fresh Management API application holding exactly these scopes. */
  const caller = async (scopes: ManagementScope[]) => {
    const app = await createClient(t, { name: `Back office ${scopes.join(' ')}`, callback_urls: ['https://bo.example/cb'], management_scopes: scopes });
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(app) }, payload: 'grant_type=client_credentials' });
    assert.equal(res.statusCode, 200, res.body);
    const token = res.json().access_token as string;
    const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
      t.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
    return { app, call };
  };
  const hashOf = async (id: string) => (await t.testDb.db.query<{ h: string }>('SELECT password_hash AS h FROM idp_users WHERE id = $1', [id])).rows[0]!.h;
  const appRow = async (id: string) => (await t.testDb.db.query<{ callback_urls: string[]; first_party: boolean; secret_hash: string }>(
    'SELECT callback_urls, first_party, secret_hash FROM idp_applications WHERE client_id = $1', [id])).rows[0]!;
  const refused = (res: Awaited<ReturnType<Awaited<ReturnType<typeof caller>>['call']>>, pattern: RegExp) =>
    assert.match(String(expectProblem(res, 403).detail), pattern);
  /** Whether the password opens a sign-in (a code back) for this user. */
  const signsIn = async (email: string, password: string) =>
    (await signIn(t.app, authorizeRequest(support.client_id, CB).url, { email, password })).statusCode === 303;

  before(async () => {
    t = await createTestApp();
    const merchant = await t.createMerchant('Acme');
    admin = await createUser(t, 'root@example.com', { is_admin: true });
    member = await createUser(t, 'cfo@acme.example');
    const invited = await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${merchant.entityId}/members`, headers: t.adminHeaders, payload: { email: 'cfo@acme.example', role: 'admin' } });
    assert.equal(invited.statusCode, 201, invited.body);
    plain = await createUser(t, 'shopper@example.com');
    other = await createClient(t, { name: 'Shop', callback_urls: ['https://shop.example/cb'], first_party: false });
    support = await createClient(t, {
      name: 'Support', callback_urls: [CB], allowed_origins: ['https://support.example', 'http://payd.test'], first_party: true, response_types: ['code', 'token'],
    });
  });
  after(() => t.close());

  const cases: Record<ManagementScope, () => Promise<void>> = {
    'read:users': async () => {
      const { call } = await caller(['read:users']);
      const one = await call('GET', `/api/v2/users/${admin.id}`);
      assert.equal(one.statusCode, 200, one.body);
      assert.equal(one.json().is_admin, true);
      assert.doesNotMatch((await call('GET', '/api/v2/users')).body, /password|\$argon2/);
      expectProblem(await call('PATCH', `/api/v2/users/${plain.id}`, { given_name: 'X' }), 403);
    },
    'create:users': async () => {
      const { call } = await caller(['create:users']);
      const made = await call('POST', '/api/v2/users', { email: 'new@example.com', password: PASSWORD });
      assert.equal(made.statusCode, 201, made.body);
      assert.equal(made.json().is_admin, false);
      expectProblem(await call('POST', '/api/v2/users', { email: 'boss@example.com', password: PASSWORD, is_admin: true }), 400);
    },
    'update:users': async () => {
      const { call } = await caller(['read:users', 'update:users']);
      // The takeover as seen: an administrator's and a dashboard admin's password set.
      const adminHash = await hashOf(admin.id);
      refused(await call('PATCH', `/api/v2/users/${admin.id}`, { password: ATTACKER_PASSWORD }), /console administrator.*update:admins/);
      assert.equal(await hashOf(admin.id), adminHash, 'the administrator\'s password is unchanged');
      assert.equal(await signsIn('root@example.com', ATTACKER_PASSWORD), false);
      const memberHash = await hashOf(member.id);
      refused(await call('PATCH', `/api/v2/users/${member.id}`, { password: ATTACKER_PASSWORD }), /dashboard.*update:dashboard_members/);
      assert.equal(await hashOf(member.id), memberHash, 'the dashboard member\'s password is unchanged');
      assert.equal(await signsIn('cfo@acme.example', ATTACKER_PASSWORD), false);
      for (const patch of [{ blocked: true }, { email_verified: false }, { given_name: 'Mallory' }]) {
        expectProblem(await call('PATCH', `/api/v2/users/${admin.id}`, patch), 403);
        expectProblem(await call('PATCH', `/api/v2/users/${member.id}`, patch), 403);
      }
      refused(await call('PATCH', `/api/v2/users/${plain.id}`, { is_admin: true }), /update:admins/);
      // An ordinary user is reached.
      const ok = await call('PATCH', `/api/v2/users/${plain.id}`, { password: ATTACKER_PASSWORD });
      assert.equal(ok.statusCode, 200, ok.body);
      assert.equal(await signsIn('shopper@example.com', ATTACKER_PASSWORD), true);
      expectProblem(await call('PATCH', '/api/v2/users/00000000-0000-4000-8000-000000000000', { given_name: 'X' }), 404);
    },
    'update:admins': async () => {
      const { call } = await caller(['update:users', 'update:admins']);
      const named = await call('PATCH', `/api/v2/users/${admin.id}`, { given_name: 'Root' });
      assert.equal(named.statusCode, 200, named.body);
      const made = await call('PATCH', `/api/v2/users/${plain.id}`, { is_admin: true });
      assert.equal(made.statusCode, 200, made.body);
      assert.equal((await call('PATCH', `/api/v2/users/${plain.id}`, { is_admin: false })).statusCode, 200);
      refused(await call('PATCH', `/api/v2/users/${member.id}`, { password: ATTACKER_PASSWORD }), /update:dashboard_members/);
    },
    'update:dashboard_members': async () => {
      const { call } = await caller(['update:users', 'update:dashboard_members']);
      const named = await call('PATCH', `/api/v2/users/${member.id}`, { given_name: 'Carla' });
      assert.equal(named.statusCode, 200, named.body);
      refused(await call('PATCH', `/api/v2/users/${admin.id}`, { given_name: 'X' }), /update:admins/);
    },
    'read:user_events': async () => {
      const { call } = await caller(['read:user_events']);
      assert.equal((await call('GET', `/api/v2/users/${admin.id}/events`)).statusCode, 200);
    },
    'login_as:users': async () => {
      const { app, call } = await caller(['login_as:users', 'read:user_events']);
      const q = `client_id=${support.client_id}&redirect_uri=${encodeURIComponent(CB)}&response_type=token`;
      // The caller passes someone else's name: the event records it as the spec says, and who called.
      const res = await call('GET', `/api/v2/users/${plain.id}/login-as?${q}&name=alice-from-support`);
      assert.equal(res.statusCode, 200, res.body);
      const code = await call('GET', `/api/v2/users/${plain.id}/login-as?client_id=${support.client_id}&redirect_uri=${encodeURIComponent(CB)}&response_type=code&name=bob`);
      assert.equal(code.statusCode, 200, code.body);
      const events = (await call('GET', `/api/v2/users/${plain.id}/events`)).json() as Array<{ auth_type: string; login_as_profile_id: string; login_as_actor: string }>;
      const loginAs = events.filter((e) => e.auth_type === 'login_as');
      assert.deepEqual(loginAs.map((e) => [e.login_as_profile_id, e.login_as_actor]).sort(),
        [['alice-from-support', `application:${app.client_id}`], ['bob', `application:${app.client_id}`]]);
      refused(await call('GET', `/api/v2/users/${admin.id}/login-as?${q}`), /console administrator.*update:admins/);
      refused(await call('GET', `/api/v2/users/${member.id}/login-as?${q}`), /dashboard.*update:dashboard_members/);
      const elevated = await caller(['login_as:users', 'update:admins']);
      assert.equal((await elevated.call('GET', `/api/v2/users/${admin.id}/login-as?${q}`)).statusCode, 200);
    },
    'read:clients': async () => {
      const { call } = await caller(['read:clients']);
      const list = await call('GET', '/api/v2/clients');
      assert.equal(list.statusCode, 200, list.body);
      assert.ok(list.json().some((c: { client_id: string }) => c.client_id === other.client_id));
      assert.doesNotMatch(list.body, /secret_hash|secret_enc|"client_secret"/);
      expectProblem(await call('PATCH', `/api/v2/clients/${other.client_id}`, { name: 'X' }), 403);
    },
    'create:clients': async () => {
      const { app, call } = await caller(['create:clients']);
      const made = await call('POST', '/api/v2/clients', { name: 'Mine', callback_urls: ['https://mine.example/cb'] });
      assert.equal(made.statusCode, 201, made.body);
      assert.equal(made.json().created_by, app.client_id);
      assert.deepEqual(made.json().management_scopes, []);
      expectProblem(await call('POST', '/api/v2/clients', { name: 'Escalate', callback_urls: ['https://mine.example/cb'], management_scopes: ['update:admins'] }), 400);
    },
    'update:clients': async () => {
      const { app, call } = await caller(['create:clients', 'update:clients']);
      const mine = (await call('POST', '/api/v2/clients', { name: 'Mine', callback_urls: ['https://mine.example/cb'] })).json() as Client;
      assert.equal((await call('PATCH', `/api/v2/clients/${mine.client_id}`, { callback_urls: ['https://mine.example/cb2'], first_party: false })).statusCode, 200);
      assert.equal((await call('POST', `/api/v2/clients/${mine.client_id}/rotate-secret`)).statusCode, 200);
      assert.equal((await call('POST', `/api/v2/clients/${app.client_id}/rotate-secret`)).statusCode, 200, 'itself');
      // Another application, as seen: callback URLs, first_party, its secret.
      const before = await appRow(other.client_id);
      refused(await call('PATCH', `/api/v2/clients/${other.client_id}`, { callback_urls: ['https://attacker.example/steal'] }), /manage:all_clients/);
      refused(await call('PATCH', `/api/v2/clients/${other.client_id}`, { first_party: true }), /manage:all_clients/);
      refused(await call('POST', `/api/v2/clients/${other.client_id}/rotate-secret`), /manage:all_clients/);
      refused(await call('POST', `/api/v2/clients/${other.client_id}/revoke-tokens`), /manage:all_clients/);
      assert.deepEqual(await appRow(other.client_id), before, 'the other application is unchanged');
      expectProblem(await call('PATCH', '/api/v2/clients/payd-console', { name: 'X' }), 403);
      expectProblem(await call('PATCH', '/api/v2/clients/payd-dashboard', { name: 'X' }), 403);
    },
    'delete:clients': async () => {
      const { call } = await caller(['create:clients', 'delete:clients']);
      const mine = (await call('POST', '/api/v2/clients', { name: 'Mine', callback_urls: ['https://mine.example/cb'] })).json() as Client;
      assert.equal((await call('DELETE', `/api/v2/clients/${mine.client_id}`)).statusCode, 204);
      refused(await call('DELETE', `/api/v2/clients/${other.client_id}`), /manage:all_clients/);
      expectProblem(await call('DELETE', '/api/v2/clients/payd-console'), 403);
    },
    'manage:all_clients': async () => {
      const { call } = await caller(['update:clients', 'delete:clients', 'manage:all_clients']);
      const before = await appRow(other.client_id);
      const changed = await call('PATCH', `/api/v2/clients/${other.client_id}`, { callback_urls: ['https://shop.example/cb', 'https://shop.example/cb2'] });
      assert.equal(changed.statusCode, 200, changed.body);
      refused(await call('PATCH', `/api/v2/clients/${other.client_id}`, { first_party: true }), /first-party flag/);
      refused(await call('POST', `/api/v2/clients/${other.client_id}/rotate-secret`), /secret/);
      const after = await appRow(other.client_id);
      assert.equal(after.first_party, false);
      assert.equal(after.secret_hash, before.secret_hash, 'the secret is unchanged');
      assert.equal((await call('POST', `/api/v2/clients/${other.client_id}/revoke-tokens`)).statusCode, 200);
      expectProblem(await call('PATCH', '/api/v2/clients/payd-console', { callback_urls: ['https://attacker.example/steal'] }), 403);
      const doomed = await createClient(t, { name: 'Doomed', callback_urls: ['https://doomed.example/cb'] });
      assert.equal((await call('DELETE', `/api/v2/clients/${doomed.client_id}`)).statusCode, 204);
    },
  };

  for (const scope of MANAGEMENT_SCOPES) {
    it(`${scope}: reaches ${AUTHORITY[scope].reaches}${AUTHORITY[scope].never ? `; never ${AUTHORITY[scope].never}` : ''}`, () => cases[scope]());
  }

  it('docs/identity.md lists every scope with what it reaches and never reaches, as authority.ts says', () => {
    const doc = readFileSync('docs/identity.md', 'utf8');
    for (const scope of MANAGEMENT_SCOPES) {
      const row = `| \`${scope}\` | ${AUTHORITY[scope].reaches} | ${AUTHORITY[scope].never || '—'} |`;
      assert.ok(doc.includes(row), `docs/identity.md lacks the row:\n${row}`);
    }
  });
});
