// Payment links through the real app: every field of the spec, the customer page, a
// link reusable after a failed attempt and PAID once authorized, cancellation, expiry,
// webhook events written with the change, isolation, and bad bodies that change nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp, returnPath } from '../helpers/app.ts';

const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const linkBody = (extra: Record<string, unknown> = {}) => ({
  amount: 4200,
  currency: 'EUR',
  capture_mode: 'MANUAL',
  shopper_redirection_url: 'https://shop.example/thanks',
  order: { reference: 'inv-7', additional_data: { channel: 'email', batch: 3 }, marketplace_sellers: [{ reference: 'seller-1', name: 'Seller One', total_sales_count: 12 }] },
  customer: { reference: 'c-1', type: 'PERSON', email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' },
  three_ds_authentication_options: { challenge_indicator: 'NO_PREFERENCE' },
  webhook: { url: 'https://shop.example/hooks/payd', headers: [{ name: 'x-shop-token', values: ['s3cret'] }] },
  allow_future_usage: false,
  ...extra,
});

describe('payment links', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Link shop');
  });
  after(() => t.close());

  const create = (body: unknown) => t.app.inject({ method: 'POST', url: '/v2/payment-links', headers: m.auth, payload: body as object });
  const count = async (table: string) => (await t.testDb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
  /** Opens the customer page and returns the widget credential it mounts. */
  const openPage = async (id: string) => {
    const page = await t.app.inject({ url: `/pay/${id}` });
    return { page, data: /data-payd-session="([^"]+)"/.exec(page.body)?.[1] };
  };
  const pay = (data: string, number: string) => t.app.inject({
    method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': data },
    payload: { split: [{ partner: 'card-sim', method: 'CARD', amount: 4200, instrument: card(number) }] },
  });
  const events = async (linkId: string) => (await t.testDb.db.query<{ type: string; url: string }>(
    `SELECT type, url FROM webhook_events WHERE data->>'id' = $1 ORDER BY created_at`, [linkId])).rows;

  it('creates a link with every field and absolute links; GET reads it back', async () => {
    const res = await create(linkBody());
    assert.equal(res.statusCode, 200, res.body);
    const l = res.json();
    assert.equal(l.status, 'CREATED');
    assert.equal(l.version, 1);
    assert.equal(l.entity_id, m.entityId);
    assert.deepEqual(l.order.additional_data, { channel: 'email', batch: 3 });
    assert.equal(l.order.marketplace_sellers[0].reference, 'seller-1');
    assert.deepEqual(l.webhook.headers, [{ name: 'x-shop-token', values: ['[redacted]'] }], 'header values are never shown again');
    assert.ok(Date.parse(l.expires_at) > Date.now());
    assert.equal(l.links.self.href, `http://payd.test/v2/payment-links/${l.id}`);
    assert.equal(l.links.customer_url.href, `http://payd.test/pay/${l.id}`);
    assert.equal(l.links.cancel.href, `http://payd.test/v2/payment-links/${l.id}/cancel`);
    assert.equal(l.links.cancel.method, 'POST');
    const got = await t.app.inject({ url: `/v2/payment-links/${l.id}`, headers: m.auth });
    assert.deepEqual(got.json(), l);
  });

  it('stays payable after a refused attempt, becomes PAID once authorized, and tells the webhook', async () => {
    const l = (await create(linkBody())).json();
    const first = await openPage(l.id);
    assert.equal(first.page.statusCode, 200);
    assert.match(String(first.page.headers['content-security-policy']), /default-src 'none'/);
    const refused = await pay(first.data!, '4000000000000002');
    assert.equal(refused.json().authorization_status, 'REFUSED', refused.body);
    assert.equal((await t.app.inject({ url: `/v2/payment-links/${l.id}`, headers: m.auth })).json().status, 'CREATED');

    const second = await openPage(l.id);
    assert.ok(second.data && second.data !== first.data, 'a new attempt gets a new session');
    const ok = await pay(second.data!, '4242424242424242');
    assert.equal(ok.json().authorization_status, 'AUTHORIZED', ok.body);
    const paid = (await t.app.inject({ url: `/v2/payment-links/${l.id}`, headers: m.auth })).json();
    assert.equal(paid.status, 'PAID');
    assert.equal(paid.links.cancel, undefined, 'a PAID link advertises no cancel (it would answer 400)');
    assert.ok(paid.links.payment);
    assert.equal(paid.payment_id, ok.json().payment_id);
    assert.ok(paid.version > l.version);
    const evs = await events(l.id);
    assert.deepEqual(evs.map((e) => e.type), ['payment_link.payment_failed', 'payment_link.paid']);
    assert.equal(evs[1]!.url, 'https://shop.example/hooks/payd');

    const again = await openPage(l.id);
    assert.match(again.page.body, /has been paid/);
    assert.equal(again.data, undefined);
    expectProblem(await pay(first.data!, '4242424242424242'), 400); // the old session is used
    expectProblem(await t.app.inject({ method: 'POST', url: `/v2/payment-links/${l.id}/cancel`, headers: m.auth }), 400);
  });

  it('one payment per link: a 3-D Secure attempt that lapsed and ends after another paid is voided', async () => {
    const l = (await create(linkBody())).json();
    const slow = await openPage(l.id);
    const pending = await pay(slow.data!, '4000000000003220');
    assert.equal(pending.json().authorization_status, 'PENDING', pending.body);
    const busy = await openPage(l.id);
    assert.equal(busy.page.statusCode, 409, 'one attempt at a time');
    // The shopper leaves the 3-D Secure page open past the claim (15 minutes).
    await t.testDb.db.query(`UPDATE payment_links SET attempt_started_at = now() - interval '20 minutes' WHERE id = $1`, [l.id]);
    const fast = await openPage(l.id);
    const paid = await pay(fast.data!, '4242424242424242');
    assert.equal(paid.json().authorization_status, 'AUTHORIZED', paid.body);
    // The first shopper finally passes the challenge and comes back.
    const acs = new URL(pending.json().redirection.url).pathname;
    await t.app.inject({ method: 'POST', url: acs, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'result=pass' });
    const sessionId = (await t.testDb.db.query<{ client_session_id: string }>('SELECT client_session_id FROM payments WHERE id = $1', [pending.json().payment_id])).rows[0]!.client_session_id;
    await t.app.inject({ url: returnPath(sessionId) });
    const link = (await t.app.inject({ url: `/v2/payment-links/${l.id}`, headers: m.auth })).json();
    assert.equal(link.status, 'PAID');
    assert.equal(link.payment_id, paid.json().payment_id, 'the first authorized payment keeps the link');
    const late = (await t.app.inject({ url: `/v2/payments/${pending.json().payment_id}`, headers: m.auth })).json();
    assert.equal(late.authorization.status, 'AUTHORIZED');
    assert.equal(late.voids.length, 1);
    assert.equal(late.voids[0].triggered_by, 'SYSTEM');
    assert.equal(late.amounts.total_voided, 4200, 'the second payment is given back in full');
  });

  it('a cancelled link shows a clear page and accepts no payment, even from a session opened before', async () => {
    const l = (await create(linkBody())).json();
    const before = await openPage(l.id);
    const cancel = await t.app.inject({ method: 'POST', url: `/v2/payment-links/${l.id}/cancel`, headers: m.auth });
    assert.equal(cancel.statusCode, 200, cancel.body);
    assert.equal(cancel.json().status, 'CANCELLED');
    assert.equal(cancel.json().links.cancel, undefined);
    const twice = await t.app.inject({ method: 'POST', url: `/v2/payment-links/${l.id}/cancel`, headers: m.auth });
    assert.equal(twice.json().version, cancel.json().version, 'cancelling twice changes nothing');
    const page = await openPage(l.id);
    assert.equal(page.page.statusCode, 410);
    assert.match(page.page.body, /cancelled/i);
    const payments = await count('payments');
    expectProblem(await pay(before.data!, '4242424242424242'), 400);
    assert.equal(await count('payments'), payments, 'no payment created');
    assert.deepEqual((await events(l.id)).map((e) => e.type), ['payment_link.cancelled']);
  });

  it('an expired link is EXPIRED and its page refuses payment', async () => {
    const l = (await create(linkBody({ expires_at: new Date(Date.now() + 1200).toISOString() }))).json();
    // Its expiry passes: moved into the past on the row instead of waited for (the links
    // service reads the wall clock, not the app clock a test could move).
    await t.testDb.db.query(`UPDATE payment_links SET expires_at = now() - interval '1 second' WHERE id = $1`, [l.id]);
    const expired = (await t.app.inject({ url: `/v2/payment-links/${l.id}`, headers: m.auth })).json();
    assert.equal(expired.status, 'EXPIRED');
    assert.equal(expired.links.cancel, undefined, 'an EXPIRED link advertises no cancel (it would answer 400)');
    assert.ok(expired.links.self && expired.links.customer_url, 'its other links stay');
    expectProblem(await t.app.inject({ method: 'POST', url: `/v2/payment-links/${l.id}/cancel`, headers: m.auth }), 400);
    const page = await openPage(l.id);
    assert.equal(page.page.statusCode, 410);
    assert.match(page.page.body, /expired/i);
  });

  it('refuses bad bodies with the field named, and writes nothing', async () => {
    const links = await count('payment_links');
    const cases: Array<[unknown, string]> = [
      [linkBody({ amount: '4200' }), 'amount'],
      [linkBody({ amount: -5 }), 'amount'],
      [linkBody({ currency: 'EURO' }), 'currency'],
      [linkBody({ expires_at: 'tomorrow' }), 'expires_at'],
      [linkBody({ expires_at: new Date(Date.now() - 1000).toISOString() }), 'expires_at'],
      [linkBody({ webhook: { url: 'ftp://x' } }), 'webhook'],
      [linkBody({ webhook: { url: 'https://x.example', headers: [{ name: 'bad name', values: ['v'] }] } }), 'webhook'],
      [linkBody({ order: { additional_data: { k: { nested: true } } } }), 'order'],
      [linkBody({ surprise: 1 }), ''],
      [linkBody({ entity_id: '00000000-0000-4000-8000-000000000000' }), ''],
    ];
    for (const [body, field] of cases) {
      const res = await create(body);
      assert.ok(res.statusCode === 400 || res.statusCode === 403, `${JSON.stringify(body).slice(0, 80)}: ${res.statusCode}`);
      const p = expectProblem(res, res.statusCode);
      if (field) assert.ok(JSON.stringify(p).includes(field), `${field} named in ${JSON.stringify(p)}`);
    }
    assert.equal(await count('payment_links'), links);
  });

  it('keeps links to their entity: another merchant gets 404 and cannot cancel', async () => {
    const l = (await create(linkBody())).json();
    const other = await t.createMerchant('Other shop');
    expectProblem(await t.app.inject({ url: `/v2/payment-links/${l.id}`, headers: other.auth }), 404);
    expectProblem(await t.app.inject({ method: 'POST', url: `/v2/payment-links/${l.id}/cancel`, headers: other.auth }), 404);
    assert.equal((await t.app.inject({ url: `/v2/payment-links/${l.id}`, headers: m.auth })).json().status, 'CREATED');
    expectProblem(await t.app.inject({ method: 'POST', url: '/v2/payment-links', payload: linkBody() }), 401);
  });
});
