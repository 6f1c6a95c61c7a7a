// A declined card does not end the checkout (issue 20, item 1): one client session takes
// another attempt after a refused or failed one, up to PAYD_SESSION_MAX_ATTEMPTS, never
// while an attempt is in flight or authorized; the merchant's API and the shopper's
// widget API follow the same rule; a payment link stays payable after a refusal; a
// failed 3-D Secure check on payd's own pages leads back to the page; methods that
// cannot succeed with what the session holds are not offered.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp, returnPath } from '../helpers/app.ts';

const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const DECLINED = '4000000000000002';
const ERROR = '4000000000000119';
const GOOD = '4242424242424242';
const CHALLENGE = '4000000000003220';

describe('checkout retries after a decline', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp({ sessionMaxAttempts: 3 });
    m = await t.createMerchant('Retry shop');
  });
  after(() => t.close());

  const newSession = async (extra: Record<string, unknown> = {}) => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 6000, currency: 'EUR', ...extra } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const widget = (data: string) => t.app.inject({ url: '/checkout/v1/session', headers: { 'x-payd-session': data } });
  const submit = (data: string, number: string) => t.app.inject({
    method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': data },
    payload: { split: [{ partner: 'card-sim', method: 'CARD', amount: 6000, instrument: card(number) }] },
  });
  const session = async (id: string) => (await t.app.inject({ url: `/v2/client-sessions/${id}`, headers: m.auth })).json();

  it('takes another card after a decline and a processing error; payment_id names the authorized attempt', async () => {
    const s = await newSession();
    const first = await submit(s.widget.data, DECLINED);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().authorization_status, 'REFUSED');
    assert.equal(first.json().can_retry, true);
    assert.equal(first.json().attempts_left, 2);
    const info = (await widget(s.widget.data)).json();
    assert.equal(info.can_pay, true);
    assert.equal(info.last_attempt_status, 'REFUSED');

    const second = (await submit(s.widget.data, ERROR)).json();
    assert.equal(second.authorization_status, 'ERROR');
    assert.equal(second.can_retry, true);
    const third = await submit(s.widget.data, GOOD);
    assert.equal(third.statusCode, 200, third.body);
    assert.equal(third.json().authorization_status, 'AUTHORIZED');
    assert.equal(third.json().can_retry, false);

    const after = await session(s.id);
    assert.equal(after.status, 'SUBMITTED');
    assert.equal(after.payment_id, third.json().payment_id, 'payment_id names the authorized attempt');
    // Each attempt is a payment of its own, on the session; the refused ones hold nothing.
    for (const [id, status] of [[first.json().payment_id, 'REFUSED'], [second.payment_id, 'ERROR']]) {
      const p = (await t.app.inject({ url: `/v2/payments/${id}`, headers: m.auth })).json();
      assert.equal(p.client_session_id, s.id);
      assert.equal(p.authorization.status, status);
    }
    // Paid: no further attempt, through the widget or the merchant's API.
    const again = expectProblem(await submit(s.widget.data, GOOD), 400);
    assert.match(String(again.detail), /already paid/);
    const api = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: m.auth,
      payload: { amount: 6000, currency: 'EUR', client_session_id: s.id, split: [{ partner: 'card-sim', method: 'CARD', amount: 6000, instrument: card(GOOD) }] },
    });
    expectProblem(api, 400);
    assert.equal((await widget(s.widget.data)).json().can_pay, false);
  });

  it('names the declines a shopper can act on (expired card, wrong CVC, insufficient funds) and no other', async () => {
    for (const [number, reason] of [['4000000000000069', 'expired_card'], ['4000000000000127', 'incorrect_cvc'], ['4000000000009995', 'insufficient_funds'], [DECLINED, undefined]] as const) {
      const s = await newSession();
      const res = (await submit(s.widget.data, number)).json();
      assert.equal(res.authorization_status, 'REFUSED');
      assert.equal(res.decline_reason, reason, number);
    }
    const ok = (await submit((await newSession()).widget.data, '4242424242424242')).json();
    assert.equal(ok.decline_reason, undefined);
  });

  it('caps the attempts of one session (card testing); the last decline says no retry', async () => {
    const s = await newSession();
    for (let i = 0; i < 2; i++) assert.equal((await submit(s.widget.data, DECLINED)).json().can_retry, true);
    const last = (await submit(s.widget.data, DECLINED)).json();
    assert.equal(last.can_retry, false);
    assert.equal(last.attempts_left, 0);
    const refused = expectProblem(await submit(s.widget.data, GOOD), 400);
    assert.match(String(refused.detail), /Too many payment attempts/);
    const info = (await widget(s.widget.data)).json();
    assert.equal(info.can_pay, false);
    // The merchant may still abort it (nothing is held).
    const abort = await t.app.inject({ method: 'POST', url: `/v2/client-sessions/${s.id}/abort`, headers: m.auth, payload: { status: 'ABORTED_BY_MERCHANT' } });
    assert.equal(abort.statusCode, 200, abort.body);
  });

  it('lets the merchant\'s API pay a session whose payment was refused, with the same rule', async () => {
    const s = await newSession();
    const body = (number: string) => ({ amount: 6000, currency: 'EUR', client_session_id: s.id, split: [{ partner: 'card-sim', method: 'CARD', amount: 6000, instrument: card(number) }] });
    const refused = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'x-idempotency-key': `r-${s.id}` }, payload: body(DECLINED) });
    assert.equal(refused.json().authorization.status, 'REFUSED');
    const ok = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'x-idempotency-key': `a-${s.id}` }, payload: body(GOOD) });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().authorization.status, 'AUTHORIZED');
    assert.equal((await session(s.id)).payment_id, ok.json().id);
  });

  it('refuses a second attempt while the first waits for 3-D Secure, and leads a failed check on the hosted page back to it', async () => {
    const s = await newSession({ integration_mode: 'HOSTED_PAGE' });
    const first = (await submit(s.widget.data, CHALLENGE)).json();
    assert.equal(first.authorization_status, 'PENDING');
    assert.ok(first.redirection?.url);
    const busy = expectProblem(await submit(s.widget.data, GOOD), 400);
    assert.match(String(busy.detail), /being completed/);

    const acs = new URL(first.redirection.url).pathname;
    const done = await t.app.inject({ method: 'POST', url: acs, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'result=fail' });
    const next = /http-equiv="refresh" content="0;url=([^"]+)"/.exec(done.body)?.[1];
    assert.ok(next, done.body);
    const back = await t.app.inject({ url: new URL(next).pathname + new URL(next).search });
    assert.equal(back.statusCode, 303);
    assert.equal(back.headers.location, `http://payd.test/checkout/pay#session=${s.widget.data}`, 'back to the hosted page, which asks for another card');
    const info = (await widget(s.widget.data)).json();
    assert.equal(info.can_pay, true);
    assert.equal(info.last_attempt_status, 'REFUSED');
    assert.equal((await submit(s.widget.data, GOOD)).json().authorization_status, 'AUTHORIZED');
  });

  it('keeps a payment link payable after a refusal: the page offers a retry, and the link is paid once', async () => {
    const link = await t.app.inject({ method: 'POST', url: '/v2/payment-links', headers: m.auth, payload: { amount: 6000, currency: 'EUR' } });
    assert.equal(link.statusCode, 200, link.body);
    const page = await t.app.inject({ url: new URL(link.json().links.customer_url.href).pathname });
    assert.equal(page.statusCode, 200, page.body);
    const data = /data-payd-session="([^"]+)"/.exec(page.body)?.[1];
    assert.ok(data);
    const refused = (await submit(data, DECLINED)).json();
    assert.equal(refused.authorization_status, 'REFUSED');
    assert.equal(refused.can_retry, true);
    const info = (await widget(data)).json();
    // The outcome page of the refused attempt leads back instead of ending there.
    const outcome = await t.app.inject({ url: returnPath(info.client_session_id) });
    assert.match(outcome.body, /not completed, and no money was taken/);
    assert.doesNotMatch(outcome.body, /REFUSED/, 'no internal status on a shopper page');
    assert.match(outcome.body, /id="payd-retry"/);
    const paid = (await submit(data, GOOD)).json();
    assert.equal(paid.authorization_status, 'AUTHORIZED');
    const got = (await t.app.inject({ url: `/v2/payment-links/${link.json().id}`, headers: m.auth })).json();
    assert.equal(got.status, 'PAID');
    assert.equal(got.payment_id ?? got.payment?.id ?? paid.payment_id, paid.payment_id);
  });

  it('offers buy-now-pay-later with the email it needs: the session\'s, or the shopper\'s given with the submit for that payment only (issue 42, item 4)', async () => {
    const without = (await widget((await newSession()).widget.data)).json();
    const bnpl = without.eligible_solutions.filter((e: any) => e.partner === 'bnpl-sim');
    assert.deepEqual(bnpl.map((e: any) => e.requires), [['customer_email'], ['customer_email']], JSON.stringify(without.eligible_solutions));
    assert.equal(without.eligible_solutions.find((e: any) => e.method === 'CARD').requires, undefined);
    const withEmail = (await widget((await newSession({ customer: { email: 'ada@example.com' } })).widget.data)).json();
    assert.deepEqual(withEmail.eligible_solutions.filter((e: any) => e.partner === 'bnpl-sim').map((e: any) => e.requires), [undefined, undefined]);

    const pay = (data: string, extra: Record<string, unknown>) => t.app.inject({
      method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': data },
      payload: { split: [{ partner: 'bnpl-sim', method: 'INSTALLMENTS_3X', amount: 6000 }], ...extra },
    });
    const s = await newSession();
    // Without the email: 400 naming the field; a malformed one: 400 naming it too; nothing is created.
    assert.equal(expectProblem(await pay(s.widget.data, {}), 400).invalid_params?.[0]?.name, 'customer_email');
    assert.equal(expectProblem(await pay(s.widget.data, { customer_email: 'not an email' }), 400).invalid_params?.[0]?.name, 'customer_email');
    assert.equal((await session(s.id)).payment_id, undefined);
    const paid = await pay(s.widget.data, { customer_email: 'shopper@example.com' });
    assert.equal(paid.statusCode, 200, paid.body);
    assert.equal(paid.json().authorization_status, 'AUTHORIZED');
    const { rows } = await t.testDb.db.query<{ customer: { email?: string } }>('SELECT customer FROM payments WHERE id = $1', [paid.json().payment_id]);
    assert.equal(rows[0]?.customer?.email, 'shopper@example.com', 'the payment carries the shopper\'s email');
    assert.equal((await session(s.id)).customer, undefined, 'the session keeps what the merchant gave');

    // The bnpl provider's refusal of a customer is a decline like any other.
    const risky = await newSession();
    assert.equal((await pay(risky.widget.data, { customer_email: 'refuse@example.com' })).json().authorization_status, 'REFUSED');

    // The merchant gave an email: the shopper's is refused rather than silently ignored.
    const given = await newSession({ customer: { email: 'ada@example.com' } });
    assert.equal(expectProblem(await pay(given.widget.data, { customer_email: 'other@example.com' }), 400).invalid_params?.[0]?.name, 'customer_email');
    assert.equal((await pay(given.widget.data, {})).json().authorization_status, 'AUTHORIZED');
  });
});
