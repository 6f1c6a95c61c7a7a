// The merchant dashboard (issue 21), through the real app: sign-in through payd's identity
// provider, members and roles (operator API), authorisation of every page by entity and
// role, money actions behind a confirmation with the form's idempotency key (a second
// post moves nothing), CSRF, the payment list's filters, and the demo's first admin.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Merchant, TestApp } from '../helpers/app.ts';
import { createUser, hiddenFields, signIn } from '../identity/idp-helpers.ts';
import { addMembers, cookieValue, createDashboardApp, dashboardClient } from '../helpers/dashboard.ts';
import { bootstrapDemo } from '../../src/admin/demo.ts';


describe('merchant dashboard', () => {
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  before(async () => {
    t = await createDashboardApp();
    a = await t.createMerchant('Shop A');
    b = await t.createMerchant('Shop B');
    await createUser(t, 'olga@example.com'); // operator of A
    await createUser(t, 'vic@example.com'); // viewer of A
    await createUser(t, 'bea@example.com'); // admin of B
    await createUser(t, 'nobody@example.com');
    await createUser(t, 'ada@example.com'); // admin of A
    await addMembers(t, [[a, 'olga@example.com', 'operator'], [a, 'vic@example.com', 'viewer'], [b, 'bea@example.com', 'admin'], [a, 'ada@example.com', 'admin']]);
  });
  after(async () => {
    await t?.close();
  });

  const { signInAs, get, post } = dashboardClient(() => t);
  const pay = async (m: Merchant, reference: string, amount = 10000, currency = 'EUR') => {
    const res = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: m.auth,
      payload: { amount, currency, capture_mode: 'MANUAL', order: { reference }, split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' } }] },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { id: string };
  };
  const operations = async (paymentId: string) =>
    (await t.testDb.db.query<{ kind: string; amount: string }>('SELECT kind, amount::text FROM payment_operations WHERE payment_id = $1 ORDER BY created_at', [paymentId])).rows;

  it('an operator captures part of a payment after confirming; posting the confirmation again moves nothing more', async () => {
    const p = await pay(a, 'ORDER-CAP-1');
    const olga = await signInAs('olga@example.com', `/dashboard/${a.entityId}/payments/${p.id}`);
    const detail = await get(olga, `/dashboard/${a.entityId}/payments/${p.id}`);
    assert.equal(detail.statusCode, 200);
    assert.match(detail.body, /ORDER-CAP-1/);
    assert.match(String(detail.headers['content-security-policy']), /script-src 'self'/);
    const form = hiddenFields(/<form method="post" action="[^"]+\/capture"[^]*?<\/form>/.exec(detail.body)![0]);
    const confirm = await post(olga, `/dashboard/${a.entityId}/payments/${p.id}/capture`, { ...Object.fromEntries(form), amount: '40.00' });
    assert.equal(confirm.statusCode, 200);
    assert.match(confirm.body, /Capture 40\.00 EUR\?/);
    assert.deepEqual(await operations(p.id), [], 'the first post only asks');
    const yes = { ...Object.fromEntries(hiddenFields(confirm.body)) };
    assert.equal(yes.confirm, 'yes');
    const done = await post(olga, `/dashboard/${a.entityId}/payments/${p.id}/capture`, yes);
    assert.equal(done.statusCode, 303, done.body);
    const twice = await post(olga, `/dashboard/${a.entityId}/payments/${p.id}/capture`, yes);
    assert.equal(twice.statusCode, 303, 'a double submit is answered like the first');
    assert.deepEqual(await operations(p.id), [{ kind: 'CAPTURE', amount: '4000' }], 'money moved once');
    const after = await get(olga, String(done.headers.location));
    assert.match(after.body, /Capture done/);
    assert.match(after.body, /Capture of 40\.00 EUR asked by olga@example\.com \(dashboard\)/);
    assert.match(after.body, /60\.00 EUR left to capture/);
  });

  // Issue 44, item 5: card 4000 0000 0000 0341 authorizes but every capture is declined;
  // the dashboard said "Capture done." while nothing was captured.
  it('a capture the partner declines is reported as declined, never done; the void asks "Void 50.00 EUR?"', async () => {
    const res = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: a.auth,
      payload: { amount: 5000, currency: 'EUR', capture_mode: 'MANUAL', order: { reference: 'ORDER-DECLINE' }, split: [{ partner: 'card-sim', method: 'CARD', amount: 5000, instrument: { type: 'CARD', number: '4000000000000341', expiry_month: '12', expiry_year: '2031', cvv: '123' } }] },
    });
    assert.equal(res.statusCode, 200, res.body);
    const id = res.json().id as string;
    const olga = await signInAs('olga@example.com');
    const detail = await get(olga, `/dashboard/${a.entityId}/payments/${id}`);
    const form = Object.fromEntries(hiddenFields(/<form method="post" action="[^"]+\/capture"[^]*?<\/form>/.exec(detail.body)![0]));
    const sent = await post(olga, `/dashboard/${a.entityId}/payments/${id}/capture`, { ...form, amount: '50.00', confirm: 'yes' });
    assert.equal(sent.statusCode, 303, sent.body);
    assert.match(String(sent.headers.location), /\?declined=capture$/);
    const after = await get(olga, String(sent.headers.location));
    assert.doesNotMatch(after.body, /Capture done/);
    assert.match(after.body, /role="alert"[^>]*>[^<]*Capture declined by the partner: nothing moved/);
    assert.equal((await t.app.inject({ url: `/v2/payments/${id}`, headers: a.auth })).json().amounts.total_captured ?? 0, 0);
    const voidForm = Object.fromEntries(hiddenFields(/<form method="post" action="[^"]+\/void"[^]*?<\/form>/.exec(after.body)![0]));
    const ask = await post(olga, `/dashboard/${a.entityId}/payments/${id}/void`, voidForm);
    assert.equal(ask.statusCode, 200, ask.body);
    assert.match(ask.body, /<title>Void 50\.00 EUR\?/, 'what the void releases, as a refund names its amount');
    const list = await get(olga, `/dashboard/${a.entityId}/payments`);
    assert.doesNotMatch(list.body, /value="CANCELLED"/, 'no filter for a status no payment has');
    assert.match(list.body, /value="REFUSED"/);
  });

  // Issue 44, item 4: the dashboard showed ¥1,000 as "10.00 JPY" and turned a typed "1000" into 100000.
  it('shows and reads amounts in the currency\'s own units: ¥1,000 is "1,000 JPY", and a typed 1000 captures ¥1,000', async () => {
    const p = await pay(a, 'ORDER-YEN-1', 1000, 'JPY');
    const olga = await signInAs('olga@example.com', `/dashboard/${a.entityId}/payments/${p.id}`);
    const detail = await get(olga, `/dashboard/${a.entityId}/payments/${p.id}`);
    assert.match(detail.body, /1,000 JPY/);
    assert.doesNotMatch(detail.body, /10\.00 JPY/);
    const form = hiddenFields(/<form method="post" action="[^"]+\/capture"[^]*?<\/form>/.exec(detail.body)![0]);
    assert.match(detail.body, /name="amount" inputmode="decimal" required value="1000"/, 'the suggested amount in yen');
    const fraction = await post(olga, `/dashboard/${a.entityId}/payments/${p.id}/capture`, { ...Object.fromEntries(form), amount: '10.50' });
    assert.equal(fraction.statusCode, 400, 'the yen has no minor unit');
    const confirm = await post(olga, `/dashboard/${a.entityId}/payments/${p.id}/capture`, { ...Object.fromEntries(form), amount: '1000' });
    assert.match(confirm.body, /Capture 1,000 JPY\?/);
    const done = await post(olga, `/dashboard/${a.entityId}/payments/${p.id}/capture`, Object.fromEntries(hiddenFields(confirm.body)));
    assert.equal(done.statusCode, 303, done.body);
    assert.deepEqual(await operations(p.id), [{ kind: 'CAPTURE', amount: '1000' }]);
    const found = await get(olga, `/dashboard/${a.entityId}/payments?currency=JPY&amount_min=1000&amount_max=1000`);
    assert.match(found.body, /ORDER-YEN-1/);
  });

  it('refuses a form without its CSRF token, and an amount over what is available, with the reason', async () => {
    const p = await pay(a, 'ORDER-CSRF');
    const olga = await signInAs('olga@example.com');
    const detail = await get(olga, `/dashboard/${a.entityId}/payments/${p.id}`);
    const form = Object.fromEntries(hiddenFields(/<form method="post" action="[^"]+\/capture"[^]*?<\/form>/.exec(detail.body)![0]));
    const noCsrf = await post(olga, `/dashboard/${a.entityId}/payments/${p.id}/capture`, { ...form, csrf: 'forged', amount: '1.00', confirm: 'yes' });
    assert.equal(noCsrf.statusCode, 403);
    const over = await post(olga, `/dashboard/${a.entityId}/payments/${p.id}/capture`, { ...form, amount: '100.01', confirm: 'yes' });
    assert.equal(over.statusCode, 400, over.body);
    assert.match(over.body, /Capture refused: [^<]*available/);
    assert.equal((await post(olga, `/dashboard/${a.entityId}/payments/${p.id}/capture`, { ...form, amount: 'ten euros' })).statusCode, 400);
    assert.deepEqual(await operations(p.id), []);
  });

  it('a viewer sees payments but no action, and a posted refund is refused with nothing moved', async () => {
    const p = await pay(a, 'ORDER-VIEW');
    await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: a.auth, payload: { amount: 10000 } });
    const vic = await signInAs('vic@example.com');
    const detail = await get(vic, `/dashboard/${a.entityId}/payments/${p.id}`);
    assert.equal(detail.statusCode, 200);
    assert.doesNotMatch(detail.body, /action="[^"]+\/(refund|capture|void)"/);
    assert.match(detail.body, /read only/);
    const csrf = hiddenFields(detail.body).get('csrf')!;
    const refund = await post(vic, `/dashboard/${a.entityId}/payments/${p.id}/refund`, { csrf, idempotency_key: crypto.randomUUID(), amount: '10.00', confirm: 'yes' });
    assert.equal(refund.statusCode, 403);
    assert.deepEqual((await operations(p.id)).map((o) => o.kind), ['CAPTURE']);
  });

  it("a member of A gets a 404 for B's dashboard and for B's payment under A; a user with no membership sees none", async () => {
    const pb = await pay(b, 'ORDER-B');
    const olga = await signInAs('olga@example.com');
    assert.equal((await get(olga, `/dashboard/${b.entityId}`)).statusCode, 404);
    assert.equal((await get(olga, `/dashboard/${b.entityId}/payments/${pb.id}`)).statusCode, 404);
    const underA = await get(olga, `/dashboard/${a.entityId}/payments/${pb.id}`);
    assert.equal(underA.statusCode, 404);
    assert.doesNotMatch(underA.body, /ORDER-B/);
    const csrf = hiddenFields((await get(olga, `/dashboard/${a.entityId}`)).body).get('csrf')!;
    const cross = await post(olga, `/dashboard/${a.entityId}/payments/${pb.id}/void`, { csrf, idempotency_key: crypto.randomUUID(), confirm: 'yes' });
    assert.equal(cross.statusCode, 404);
    assert.deepEqual(await operations(pb.id), []);
    const nobody = await signInAs('nobody@example.com');
    const home = await get(nobody, '/dashboard');
    assert.match(home.body, /not a member of any merchant/);
    assert.equal((await get(nobody, `/dashboard/${a.entityId}/payments`)).statusCode, 404);
  });

  it('finds payments by order reference, status and amount; explains a filter it cannot read', async () => {
    await pay(a, 'FIND-ME-42', 4242);
    const vic = await signInAs('vic@example.com');
    const list = await get(vic, `/dashboard/${a.entityId}/payments?order_reference=FIND-ME-42`);
    assert.equal(list.statusCode, 200);
    assert.match(list.body, /FIND-ME-42/);
    assert.doesNotMatch(list.body, /ORDER-VIEW/);
    const byAmount = await get(vic, `/dashboard/${a.entityId}/payments?currency=EUR&amount_min=42.42&amount_max=42.42&status=AUTHORIZED`);
    assert.match(byAmount.body, /FIND-ME-42/);
    const bad = await get(vic, `/dashboard/${a.entityId}/payments?currency=EUR&amount_min=lots&from=yesterday`);
    assert.equal(bad.statusCode, 200);
    assert.match(bad.body, /Amount from: write it in EUR like 12\.50/);
    assert.match((await get(vic, `/dashboard/${a.entityId}/payments?amount_min=10`)).body, /Amount from: choose the currency the amount is in/);
    assert.match(bad.body, /From: a date such as/);
    // One search box: payment id (opens it), card's last four, customer email, order reference.
    const withEmail = (await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: a.auth,
      payload: { amount: 1234, currency: 'EUR', customer: { email: 'Lin@Example.com' }, order: { reference: 'FIND-BY-MAIL' }, split: [{ partner: 'card-sim', method: 'CARD', amount: 1234, instrument: { type: 'CARD', number: '5555555555554444', expiry_month: '12', expiry_year: '2031', cvv: '123' } }] },
    })).json();
    const byId = await get(vic, `/dashboard/${a.entityId}/payments?order_reference=${withEmail.id}`);
    assert.equal(byId.statusCode, 303);
    assert.equal(byId.headers.location, `/dashboard/${a.entityId}/payments/${withEmail.id}`);
    const byUpperId = await get(vic, `/dashboard/${a.entityId}/payments?order_reference=${withEmail.id.toUpperCase()}`);
    assert.equal(byUpperId.statusCode, 303, 'an id in capitals opens the payment too');
    assert.equal(byUpperId.headers.location, `/dashboard/${a.entityId}/payments/${withEmail.id}`);
    const byLastFour = await get(vic, `/dashboard/${a.entityId}/payments?order_reference=4444`);
    assert.match(byLastFour.body, /FIND-BY-MAIL/);
    assert.doesNotMatch(byLastFour.body, /FIND-ME-42/);
    const byEmail = await get(vic, `/dashboard/${a.entityId}/payments?order_reference=lin%40example.com`);
    assert.match(byEmail.body, /FIND-BY-MAIL/);
    assert.doesNotMatch(byEmail.body, /FIND-ME-42/);
    const detail = await get(vic, `/dashboard/${a.entityId}/payments/${withEmail.id}`);
    assert.match(detail.body, /id="payment-card">MASTERCARD •••• 4444 \(expires 12\/31\)<\/dd>/, 'the brand of 5555 5555 5555 4444, its last four and expiry');
    // Another merchant's payment id opens nothing.
    const bea = await signInAs('bea@example.com');
    const other = await get(bea, `/dashboard/${b.entityId}/payments?order_reference=${withEmail.id}`);
    assert.equal(other.statusCode, 200);
    assert.doesNotMatch(other.body, /FIND-BY-MAIL/);
    const home = await get(vic, `/dashboard/${a.entityId}`);
    assert.match(home.body, /Volume authorised today/);
    assert.match(home.body, /<svg role="img"/);
  });

  it('payment links: an operator creates one (a second post of the form creates nothing more), copies its URL, cancels it; a viewer only reads', async () => {
    const olga = await signInAs('olga@example.com');
    const list = await get(olga, `/dashboard/${a.entityId}/links`);
    assert.equal(list.statusCode, 200);
    const form = Object.fromEntries(hiddenFields(/<form method="post" action="[^"]+\/links" [^]*?<\/form>/.exec(list.body)![0]));
    const fields = { ...form, amount: '25.00', currency: 'EUR', order_reference: 'LINK-ORDER-1', days: '3' };
    const created = await post(olga, `/dashboard/${a.entityId}/links`, fields);
    assert.equal(created.statusCode, 303, created.body);
    assert.equal((await post(olga, `/dashboard/${a.entityId}/links`, fields)).statusCode, 303);
    const links = (await t.testDb.db.query<{ id: string; status: string }>(`SELECT id, status FROM payment_links WHERE entity_id = $1 AND "order"->>'reference' = 'LINK-ORDER-1'`, [a.entityId])).rows;
    assert.equal(links.length, 1, 'one link for one form');
    const page = await get(olga, `/dashboard/${a.entityId}/links?created=1`);
    assert.match(page.body, new RegExp(`value="[^"]*/${links[0]!.id}[^"]*"`), 'the customer URL, to copy');
    assert.match(page.body, /data-copy=/);
    const bad = await post(olga, `/dashboard/${a.entityId}/links`, { ...form, form_key: crypto.randomUUID(), amount: 'free', currency: 'EUR' });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /Amount: write it in EUR like 12\.50/);
    const csrf = hiddenFields(page.body).get('csrf')!;
    assert.equal((await post(olga, `/dashboard/${a.entityId}/links/${links[0]!.id}/cancel`, { csrf })).statusCode, 303);
    assert.equal((await t.testDb.db.query<{ status: string }>('SELECT status FROM payment_links WHERE id = $1', [links[0]!.id])).rows[0]!.status, 'CANCELLED');
    const vic = await signInAs('vic@example.com');
    const seen = await get(vic, `/dashboard/${a.entityId}/links`);
    assert.match(seen.body, /LINK-ORDER-1/);
    assert.doesNotMatch(seen.body, /Create the link/);
    assert.equal((await post(vic, `/dashboard/${a.entityId}/links`, { ...fields, csrf: hiddenFields(seen.body).get('csrf')!, form_key: crypto.randomUUID() })).statusCode, 403);
  });

  it('developers: an admin creates an API key shown once and revokes it (it gets no token any more); an operator may not', async () => {
    const ada = await signInAs('ada@example.com');
    const dev = await get(ada, `/dashboard/${a.entityId}/developers`);
    assert.equal(dev.statusCode, 200);
    const csrf = hiddenFields(dev.body).get('csrf')!;
    const created = await post(ada, `/dashboard/${a.entityId}/developers/api-keys`, { csrf });
    assert.equal(created.statusCode, 201);
    const apiKey = /id="new-key" readonly value="([^"]+)"/.exec(created.body)![1]!;
    const token = (key: string) => t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'x-api-key': key, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'grant_type=client_credentials' });
    assert.equal((await token(apiKey)).statusCode, 200);
    const again = await get(ada, `/dashboard/${a.entityId}/developers`);
    assert.doesNotMatch(again.body, new RegExp(apiKey), 'shown once');
    const keyId = (await t.testDb.db.query<{ id: string }>('SELECT id::text FROM api_keys WHERE entity_id = $1 ORDER BY created_at DESC LIMIT 1', [a.entityId])).rows[0]!.id;
    assert.equal((await post(ada, `/dashboard/${a.entityId}/developers/api-keys/${keyId}/revoke`, { csrf })).statusCode, 303);
    assert.equal((await token(apiKey)).statusCode, 401);
    const olga = await signInAs('olga@example.com');
    assert.equal((await get(olga, `/dashboard/${a.entityId}/developers`)).statusCode, 403);
    assert.equal((await post(olga, `/dashboard/${a.entityId}/developers/api-keys`, { csrf: hiddenFields((await get(olga, `/dashboard/${a.entityId}`)).body).get('csrf')! })).statusCode, 403);
  });

  it('operator API: invite (a new address gets an account and a mail), change a role, keep one admin, remove', async () => {
    const invite = await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${b.entityId}/members`, headers: t.adminHeaders, payload: { email: 'new.hire@example.com', role: 'viewer' } });
    assert.equal(invite.statusCode, 201, invite.body);
    assert.equal(invite.json().invited, true);
    assert.equal(invite.headers['cache-control'], 'no-store');
    const link = new URL(invite.json().invitation_url);
    assert.equal(link.pathname, '/identity/v1/password/reset');
    const mail = (await t.testDb.db.query<{ subject: string; body: string }>(`SELECT subject, body FROM idp_mail_outbox WHERE to_address = 'new.hire@example.com'`)).rows[0]!;
    assert.equal(mail.subject, 'You are invited to Shop B on payd');
    assert.match(mail.body, /password\/reset\?token=\[redacted\]/);
    assert.doesNotMatch(mail.body, new RegExp(link.searchParams.get('token')!), 'the outbox keeps the link redacted');
    assert.equal((await t.app.inject({ url: `${link.pathname}${link.search}` })).statusCode, 200, 'the link answered once works');
    const list = await t.app.inject({ url: `/admin/v1/entities/${b.entityId}/members`, headers: t.adminHeaders });
    assert.deepEqual(list.json().data.map((m: { email: string; role: string }) => `${m.email}:${m.role}`).sort(), ['bea@example.com:admin', 'new.hire@example.com:viewer']);
    const bea = list.json().data.find((m: { email: string }) => m.email === 'bea@example.com').user_id;
    const demote = await t.app.inject({ method: 'PATCH', url: `/admin/v1/entities/${b.entityId}/members/${bea}`, headers: t.adminHeaders, payload: { role: 'viewer' } });
    assert.equal(demote.statusCode, 409, 'the last admin stays');
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/admin/v1/entities/${b.entityId}/members/${bea}`, headers: t.adminHeaders })).statusCode, 409);
    const hire = list.json().data.find((m: { email: string }) => m.email === 'new.hire@example.com').user_id;
    assert.equal((await t.app.inject({ method: 'PATCH', url: `/admin/v1/entities/${b.entityId}/members/${hire}`, headers: t.adminHeaders, payload: { role: 'admin' } })).json().role, 'admin');
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/admin/v1/entities/${b.entityId}/members/${bea}`, headers: t.adminHeaders })).statusCode, 204);
    assert.equal((await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${b.entityId}/members`, headers: t.adminHeaders, payload: { email: 'x@example.com', role: 'owner' } })).statusCode, 400);
    assert.equal((await t.app.inject({ method: 'GET', url: `/admin/v1/entities/${crypto.randomUUID()}/members`, headers: t.adminHeaders })).statusCode, 404);
  });
});

describe('the demo merchant', () => {
  it('comes with a first dashboard admin whose password is shown once, who can sign in', async () => {
    const t = await createDashboardApp();
    try {
      const demo = await bootstrapDemo(t.app.services.entities, { db: t.testDb.db, identity: t.app.services.identity });
      assert.ok(demo?.dashboard);
      const start = await t.app.inject({ url: '/dashboard' });
      const authorize = new URL(String(start.headers.location));
      const posted = await signIn(t.app, `${authorize.pathname}${authorize.search}`, { email: demo.dashboard.email, password: demo.dashboard.password });
      const back = new URL(String(posted.headers.location));
      const cb = await t.app.inject({ url: `${back.pathname}${back.search}`, headers: { cookie: cookieValue(start, 'payd_dashboard_login')! } });
      const home = await t.app.inject({ url: '/dashboard', headers: { cookie: cookieValue(cb, 'payd_dashboard')! } });
      assert.equal(home.statusCode, 303);
      assert.equal(home.headers.location, `/dashboard/${demo.entityId}`);
      assert.equal(await bootstrapDemo(t.app.services.entities, { db: t.testDb.db, identity: t.app.services.identity }), undefined, 'only on a fresh database');
    } finally {
      await t.close();
    }
  });
});
