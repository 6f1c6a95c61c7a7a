// Issue 14, item 10: "a password change leaves sessions and tokens alive". A new password
// (or a block) set through the Management API ends the user's sign-in sessions and
// revokes their refresh and access tokens at once; another user's stay.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { type Client, FORM, PASSWORD, authorizeRequest, basic, cookieOf, createClient, createUser, exchange, introspect, signIn } from './idp-helpers.ts';

const CB = 'https://rp.example/callback';

describe('identity: a password change or a block ends sessions and revokes tokens', () => {
  let t: TestApp;
  let client: Client;
  let mgmtToken: string;

  before(async () => {
    t = await createTestApp();
    client = await createClient(t, { name: 'Shop', callback_urls: [CB] });
    const mgmt = await createClient(t, { name: 'Back office', callback_urls: ['https://bo.example/cb'], management_scopes: ['update:users'] });
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(mgmt) }, payload: 'grant_type=client_credentials' });
    assert.equal(res.statusCode, 200, res.body);
    mgmtToken = res.json().access_token;
  });
  after(() => t.close());

  /** Signs in, and exchanges the code for tokens with a refresh token. */
  async function signedIn(email: string) {
    const a = authorizeRequest(client.client_id, CB, { scope: 'openid email offline_access' });
    const res = await signIn(t.app, a.url, { email, password: PASSWORD });
    assert.equal(res.statusCode, 303, res.body);
    const code = new URL(String(res.headers.location)).searchParams.get('code')!;
    const tokens = await exchange(t.app, client, code, CB, a.verifier);
    assert.equal(tokens.statusCode, 200, tokens.body);
    assert.ok(tokens.json().refresh_token);
    return { session: cookieOf(res, 'payd_idp_session')!, access: tokens.json().access_token as string, refresh: tokens.json().refresh_token as string };
  }
  const silent = async (session: string) => {
    const a = authorizeRequest(client.client_id, CB, { prompt: 'none' });
    const res = await t.app.inject({ url: a.url, headers: { cookie: session } });
    return new URL(String(res.headers.location)).searchParams;
  };
  const refresh = (token: string) => t.app.inject({
    method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(client) }, payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token }).toString(),
  });
  const patchUser = (id: string, payload: object) =>
    t.app.inject({ method: 'PATCH', url: `/api/v2/users/${id}`, headers: { authorization: `Bearer ${mgmtToken}` }, payload });

  for (const [what, patch] of [['a new password', { password: 'a brand new passphrase 42' }], ['a block', { blocked: true }]] as const) {
    it(`${what}: the session, the access token and the refresh token stop working; another user's do not`, async () => {
      const email = `user-${what.length}-${Date.now()}@example.com`;
      const user = await createUser(t, email);
      const bystander = `by-${what.length}-${Date.now()}@example.com`;
      await createUser(t, bystander);
      const mine = await signedIn(email);
      const theirs = await signedIn(bystander);
      const before = await silent(mine.session);
      assert.ok(before.get('code'), `the session signs in silently before: ${before}`);
      assert.equal((await introspect(t.app, client, mine.access)).active, true);

      const res = await patchUser(user.id, patch);
      assert.equal(res.statusCode, 200, res.body);

      assert.equal((await silent(mine.session)).get('error'), 'login_required', 'the session ended');
      assert.equal((await introspect(t.app, client, mine.access)).active, false, 'the access token is revoked');
      const r = await refresh(mine.refresh);
      assert.equal(r.statusCode, 400, r.body);
      assert.equal(r.json().error, 'invalid_grant', 'the refresh token is revoked');

      assert.ok((await silent(theirs.session)).get('code'), "another user's session stays");
      assert.equal((await introspect(t.app, client, theirs.access)).active, true);
      assert.equal((await refresh(theirs.refresh)).statusCode, 200);
    });
  }
});
