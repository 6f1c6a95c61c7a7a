// Issue 14, item 11: "empty name claims come out as null (omit them); silent SSO and
// messenger logins are recorded as 'password' logins".
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { type Client, PASSWORD, authorizeRequest, createClient, createUser, exchange, signIn } from './idp-helpers.ts';

const CB = 'https://rp.example/callback';

describe('identity: name claims and the kind of each login', () => {
  let t: TestApp;
  let client: Client;
  before(async () => {
    t = await createTestApp();
    client = await createClient(t, { name: 'Shop', callback_urls: [CB] });
  });
  after(() => t.close());

  const tokensFor = async (email: string) => {
    const a = authorizeRequest(client.client_id, CB);
    const res = await signIn(t.app, a.url, { email, password: PASSWORD });
    assert.equal(res.statusCode, 303, res.body);
    const code = new URL(String(res.headers.location)).searchParams.get('code')!;
    const tokens = await exchange(t.app, client, code, CB, a.verifier);
    assert.equal(tokens.statusCode, 200, tokens.body);
    return { ...tokens.json(), session: String(([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('payd_idp_session='))).split(';')[0] };
  };

  it('omits a name the user does not have, in the id_token and at /userinfo (never null)', async () => {
    await createUser(t, 'nameless@example.com', { given_name: undefined, family_name: undefined });
    const { id_token, access_token } = await tokensFor('nameless@example.com');
    const claims = decodeJwt(id_token);
    assert.equal('given_name' in claims, false, JSON.stringify(claims));
    assert.equal('family_name' in claims, false);
    const info = (await t.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${access_token}` } })).json();
    assert.equal('given_name' in info, false, JSON.stringify(info));
    assert.equal('family_name' in info, false);
    assert.equal(info.email, 'nameless@example.com');
    // A user with names keeps them.
    await createUser(t, 'named@example.com');
    assert.equal(decodeJwt((await tokensFor('named@example.com')).id_token).given_name, 'Test');
  });

  it('records a form sign-in as password and a silent sign-in from the session as sso', async () => {
    const user = await createUser(t, 'events@example.com');
    const { session } = await tokensFor('events@example.com');
    const silent = await t.app.inject({ url: authorizeRequest(client.client_id, CB, { prompt: 'none' }).url, headers: { cookie: session } });
    assert.ok(new URL(String(silent.headers.location)).searchParams.get('code'), String(silent.headers.location));
    const events = (await t.app.inject({ url: `/admin/v1/identity/users/${user.id}/events`, headers: t.adminHeaders })).json();
    assert.deepEqual(events.map((e: { auth_type: string }) => e.auth_type), ['sso', 'password']);
  });
});
