// The dashboard's Team page (issue 21): an admin invites (a new address gets an account
// and a mail), changes roles and removes members; the entity keeps an admin even when two
// admins demote each other at once; operators and other entities get nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Merchant, TestApp } from '../helpers/app.ts';
import { FORM, PASSWORD, basic, createClient, createUser, hiddenFields } from '../identity/idp-helpers.ts';
import { addMembers, createDashboardApp, createMembers, dashboardClient } from '../helpers/dashboard.ts';

describe('dashboard: team', () => {
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  const { signInAs, get, post } = dashboardClient(() => t);

  before(async () => {
    t = await createDashboardApp();
    a = await t.createMerchant('Team shop A');
    b = await t.createMerchant('Team shop B');
    for (const email of ['ada@team.example', 'ann@team.example', 'olga@team.example', 'bea@team.example']) await createUser(t, email);
    await addMembers(t, [[a, 'ada@team.example', 'admin'], [a, 'ann@team.example', 'admin'], [a, 'olga@team.example', 'operator'], [b, 'bea@team.example', 'admin']]);
  });
  after(async () => {
    await t?.close();
  });

  const members = async (entityId: string) => Object.fromEntries((await t.testDb.db.query<{ email: string; role: string }>(
    'SELECT u.email, m.role FROM dashboard_members m JOIN idp_users u ON u.id = m.user_id WHERE m.entity_id = $1', [entityId])).rows.map((r) => [r.email, r.role]));
  const userId = async (email: string) => (await t.testDb.db.query<{ id: string }>('SELECT id::text FROM idp_users WHERE email = $1', [email])).rows[0]!.id;

  it('an admin invites a new address (an account and a mail) and an existing user, changes a role and removes a member', async () => {
    const ada = await signInAs('ada@team.example');
    const team = await get(ada, `/dashboard/${a.entityId}/team`);
    assert.equal(team.statusCode, 200, team.body);
    assert.match(team.body, /ada@team\.example \(you\)/);
    const csrf = hiddenFields(team.body).get('csrf')!;
    const invited = await post(ada, `/dashboard/${a.entityId}/team`, { csrf, email: 'new.clerk@team.example', role: 'viewer' });
    assert.equal(invited.statusCode, 200, invited.body);
    assert.equal(invited.headers['cache-control'], 'no-store');
    // The invitation link, shown once to the inviting admin: the outbox keeps it redacted.
    const link = new URL(/id="invitation-link" readonly value="([^"]+)"/.exec(invited.body)![1]!.replace(/&amp;/g, '&'));
    const token = link.searchParams.get('token')!;
    assert.ok(token.length >= 43);
    const mail = (await t.testDb.db.query<{ subject: string; body: string }>(`SELECT subject, body FROM idp_mail_outbox WHERE to_address = 'new.clerk@team.example'`)).rows[0]!;
    assert.equal(mail.subject, 'You are invited to Team shop A on payd');
    assert.match(mail.body, /password\/reset\?token=\[redacted\]/);
    assert.doesNotMatch(mail.body, new RegExp(token), 'the outbox cannot set the invitee\'s password');
    const stored = await t.testDb.db.query(`SELECT 1 FROM idp_password_resets r JOIN idp_users u ON u.id = r.user_id WHERE u.email = 'new.clerk@team.example' AND r.token_hash = encode(sha256(convert_to($1, 'UTF8')), 'hex')`, [token]);
    assert.equal(stored.rows.length, 1, 'the token is stored only as its hash');
    assert.doesNotMatch((await get(ada, `/dashboard/${a.entityId}/team`)).body, new RegExp(token), 'shown once');
    const choose = (password: string) => t.app.inject({ method: 'POST', url: '/identity/v1/password/reset', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ token, password }).toString() });
    assert.equal((await t.app.inject({ url: `${link.pathname}${link.search}` })).statusCode, 200, 'the link opens the form');
    assert.equal((await choose('123456789012')).statusCode, 400, 'the password rule');
    assert.equal((await choose('the new clerk chose this passphrase')).statusCode, 200);
    assert.equal((await choose('and then tried another passphrase')).statusCode, 400, 'single use');
    const added = await post(ada, `/dashboard/${a.entityId}/team`, { csrf, email: 'bea@team.example', role: 'operator' });
    assert.match(String(added.headers.location), /added=1/, 'an existing account is added at once');
    assert.equal((await post(ada, `/dashboard/${a.entityId}/team`, { csrf, email: 'not an email', role: 'viewer' })).statusCode, 400);
    assert.equal((await post(ada, `/dashboard/${a.entityId}/team`, { csrf, email: 'x@team.example', role: 'owner' })).statusCode, 400);

    const olga = await userId('olga@team.example');
    assert.equal((await post(ada, `/dashboard/${a.entityId}/team/${olga}/role`, { csrf, role: 'viewer' })).statusCode, 303);
    const clerk = await userId('new.clerk@team.example');
    assert.equal((await post(ada, `/dashboard/${a.entityId}/team/${clerk}/remove`, { csrf })).statusCode, 303);
    assert.deepEqual(await members(a.entityId), {
      'ada@team.example': 'admin', 'ann@team.example': 'admin', 'olga@team.example': 'viewer', 'bea@team.example': 'operator',
    });
    assert.deepEqual(await members(b.entityId), { 'bea@team.example': 'admin' }, 'B is untouched');
    const actions = (await t.testDb.db.query<{ action: string }>('SELECT action FROM dashboard_actions WHERE entity_id = $1 ORDER BY created_at', [a.entityId])).rows.map((r) => r.action);
    assert.deepEqual(actions, ['Invite new.clerk@team.example as viewer', 'Invite bea@team.example as operator', "Change a member's role to viewer", 'Remove a member']);
  });

  it('two admins demoting each other at once: one succeeds, the entity keeps an admin', async () => {
    const [ada, ann] = [await signInAs('ada@team.example'), await signInAs('ann@team.example')];
    const csrfOf = async (cookie: string) => hiddenFields((await get(cookie, `/dashboard/${a.entityId}/team`)).body).get('csrf')!;
    const [adaId, annId] = [await userId('ada@team.example'), await userId('ann@team.example')];
    const results = await Promise.all([
      post(ada, `/dashboard/${a.entityId}/team/${annId}/role`, { csrf: await csrfOf(ada), role: 'viewer' }),
      post(ann, `/dashboard/${a.entityId}/team/${adaId}/role`, { csrf: await csrfOf(ann), role: 'viewer' }),
    ]);
    const codes = results.map((r) => r.statusCode).sort();
    // The second one either finds the last admin (409) or, already demoted, no longer
    // has the right to change roles (403).
    assert.equal(codes[0], 303, JSON.stringify(codes));
    assert.ok([403, 409].includes(codes[1]!), JSON.stringify(codes));
    const roles = await members(a.entityId);
    assert.equal(Object.values(roles).filter((r) => r === 'admin').length, 1, JSON.stringify(roles));
    // The last admin can neither leave nor step down.
    const admin = Object.entries(roles).find(([, r]) => r === 'admin')![0];
    const cookie = admin === 'ada@team.example' ? ada : ann;
    const last = await post(cookie, `/dashboard/${a.entityId}/team/${await userId(admin)}/remove`, { csrf: await csrfOf(cookie) });
    assert.equal(last.statusCode, 409);
    assert.match(last.body, /keeps at least one admin/);
  });

  it('operators get 403 and no Team link; another entity\'s admin gets 404 and changes nothing', async () => {
    const bea = await signInAs('bea@team.example'); // operator of A now, admin of B
    assert.equal((await get(bea, `/dashboard/${a.entityId}/team`)).statusCode, 403);
    assert.doesNotMatch((await get(bea, `/dashboard/${a.entityId}`)).body, />Team</);
    const csrf = hiddenFields((await get(bea, `/dashboard/${b.entityId}/team`)).body).get('csrf')!;
    const olga = await userId('olga@team.example');
    assert.equal((await post(bea, `/dashboard/${b.entityId}/team/${olga}/remove`, { csrf })).statusCode, 404, "A's member is not B's");
    assert.equal((await post(bea, `/dashboard/${a.entityId}/team/${olga}/remove`, { csrf })).statusCode, 403);
    assert.equal((await members(a.entityId))['olga@team.example'], 'viewer');
  });

  // Issue 40 (found while fixing items 1-2): an account registered by someone else than the
  // mailbox's owner, here a back office holding create:users and update:users, was made a
  // member at once when a merchant's admin invited its address: the merchant's dashboard
  // went to whoever held its password.
  it('an existing account that reaches nothing privileged joins only through its own mailed link; its password holder gets nothing', async () => {
    const office = await createClient(t, { name: 'Back office', callback_urls: ['https://bo.example/cb'], management_scopes: ['create:users', 'update:users'] });
    const token = (await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, ...basic(office) }, payload: 'grant_type=client_credentials' })).json().access_token;
    const made = await t.app.inject({ method: 'POST', url: '/api/v2/users', headers: { authorization: `Bearer ${token}` }, payload: { email: 'cfo@team.example', password: PASSWORD, email_verified: true } });
    assert.equal(made.statusCode, 201, made.body);

    // An admin of its own (the test above leaves either ada or ann an admin, not both).
    await createMembers(t, [[a, 'boss@team.example', 'admin']]);
    const ada = await signInAs('boss@team.example');
    const csrf = hiddenFields((await get(ada, `/dashboard/${a.entityId}/team`)).body).get('csrf')!;
    const invited = await post(ada, `/dashboard/${a.entityId}/team`, { csrf, email: 'cfo@team.example', role: 'admin' });
    assert.equal(invited.statusCode, 200, invited.body);
    assert.match(invited.body, /already has a payd account/);
    const link = new URL(/id="invitation-link" readonly value="([^"]+)"/.exec(invited.body)![1]!.replace(/&amp;/g, '&'));
    assert.equal((await members(a.entityId))['cfo@team.example'], undefined, 'not a member yet');
    assert.match((await get(ada, `/dashboard/${a.entityId}/team`)).body, /id="pending-invitations"><li>cfo@team\.example, Admin/);

    // Whoever holds the password signs in: no entity. Changing the password does not accept
    // the invitation either (only redeeming its own link does: dashboard_invitations).
    const holder = await signInAs('cfo@team.example');
    assert.equal((await get(holder, `/dashboard/${a.entityId}`)).statusCode, 404);
    const changed = await t.app.inject({ method: 'PATCH', url: `/api/v2/users/${made.json().id}`, headers: { authorization: `Bearer ${token}` }, payload: { password: 'another passphrase the office knows' } });
    assert.equal(changed.statusCode, 200, changed.body);
    const again = await signInAs('cfo@team.example', '/dashboard', 'another passphrase the office knows');
    assert.equal((await get(again, `/dashboard/${a.entityId}`)).statusCode, 404);
    assert.equal((await members(a.entityId))['cfo@team.example'], undefined);

    // A fresh invitation; the mailbox's owner redeems its link: a new password, every session
    // of the account ended, and the membership from the next sign-in.
    const second = await post(ada, `/dashboard/${a.entityId}/team`, { csrf, email: 'cfo@team.example', role: 'admin' });
    const token2 = new URL(/id="invitation-link" readonly value="([^"]+)"/.exec(second.body)![1]!.replace(/&amp;/g, '&')).searchParams.get('token')!;
    assert.notEqual(token2, link.searchParams.get('token'));
    const chosen = await t.app.inject({ method: 'POST', url: '/identity/v1/password/reset', headers: FORM, payload: new URLSearchParams({ token: token2, password: 'the real cfo chose this passphrase' }).toString() });
    assert.equal(chosen.statusCode, 200, chosen.body);
    assert.equal((await get(again, `/dashboard/${a.entityId}`)).statusCode, 303, 'the holder\'s dashboard session ended with the reset');
    const cfo = await signInAs('cfo@team.example', '/dashboard', 'the real cfo chose this passphrase');
    assert.equal((await members(a.entityId))['cfo@team.example'], 'admin');
    assert.equal((await get(cfo, `/dashboard/${a.entityId}`)).statusCode, 200);
  });
});
