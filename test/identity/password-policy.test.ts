// One password rule on every path that sets a password (src/identity/idp/password-policy.ts,
// applied by passwords.ts hashPassword): 12 to 256 characters and a zxcvbn score of at
// least 2. The operator API and the Management API (create and update) accepted
// `123456789012` before (issue 40 item 2); a refusal is a 400 problem naming `password`.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type TestApp } from '../helpers/app.ts';
import { FORM, PASSWORD, createClient, createUser } from './idp-helpers.ts';

const WEAK = ['123456789012', 'password1234', 'aaaaaaaaaaaaaaaa'];

describe('identity: one password rule', () => {
  let t: TestApp;
  let token: string;

  before(async () => {
    t = await createTestApp();
    const mgmt = await createClient(t, {
      name: 'Back office', callback_urls: ['https://bo.example/cb'], token_endpoint_auth_method: 'client_secret_post',
      management_scopes: ['read:users', 'create:users', 'update:users'],
    });
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: FORM, payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: mgmt.client_id, client_secret: mgmt.client_secret }).toString() });
    assert.equal(res.statusCode, 200, res.body);
    token = res.json().access_token;
  });
  after(() => t.close());

  const refusedForPassword = (res: Parameters<typeof expectProblem>[0]) => {
    const body = expectProblem(res, 400);
    const param = body.invalid_params?.find((p) => p.name === 'password');
    assert.ok(param, `names the field password: ${res.body}`);
    assert.match(param.reason, /too easy to guess|characters/);
    return param.reason;
  };

  it('the operator API refuses a guessable password with a 400 naming password, and creates no user', async () => {
    for (const [i, password] of WEAK.entries()) {
      const res = await t.app.inject({ method: 'POST', url: '/admin/v1/identity/users', headers: t.adminHeaders, payload: { email: `weak${i}@example.com`, password } });
      assert.match(refusedForPassword(res), /too easy to guess/);
    }
    const rows = await t.testDb.db.query(`SELECT 1 FROM idp_users WHERE email LIKE 'weak%'`);
    assert.equal(rows.rows.length, 0);
    const ok = await t.app.inject({ method: 'POST', url: '/admin/v1/identity/users', headers: t.adminHeaders, payload: { email: 'strong@example.com', password: PASSWORD } });
    assert.equal(ok.statusCode, 201, ok.body);
  });

  it('the Management API refuses it at create and at update; the old password stays', async () => {
    const api = (method: 'POST' | 'PATCH', url: string, payload: object) => t.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, payload });
    refusedForPassword(await api('POST', '/api/v2/users', { email: 'mgmt-weak@example.com', password: '123456789012' }));
    const user = await createUser(t, 'mgmt@example.com');
    refusedForPassword(await api('PATCH', `/api/v2/users/${user.id}`, { password: '123456789012' }));
    const hash = async () => (await t.testDb.db.query<{ password_hash: string }>('SELECT password_hash FROM idp_users WHERE id = $1', [user.id])).rows[0]!.password_hash;
    const before = await hash();
    refusedForPassword(await api('PATCH', `/api/v2/users/${user.id}`, { password: 'qwertyuiopasdf' }));
    assert.equal(await hash(), before, 'the password is unchanged');
    const changed = await api('PATCH', `/api/v2/users/${user.id}`, { password: 'another quite sturdy passphrase' });
    assert.equal(changed.statusCode, 200, changed.body);
    assert.notEqual(await hash(), before);
  });
});
