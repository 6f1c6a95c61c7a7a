// Saved cards through the shopper's checkout API (docs/checkout.md "Saved cards";
// docs/decisions.md "Saved cards"): a session lists and takes only the saved cards of the
// customer the merchant named by customer.reference, never by an email (an email is what
// a shopper types: a guest checkout's field, the widget's buy-now-pay-later field), and
// the checkout takes them only customer-initiated, with the CVC.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const year = String(new Date().getFullYear() + 2);
const card = (number: string) => ({ type: 'CARD', number, expiry_month: '11', expiry_year: year, cvv: '123' });

describe('saved cards in the checkout: by the merchant\'s customer reference only', () => {
  let t: TestApp;
  let m: Merchant;
  let ada: string;
  let bob: string;
  let adaExpired: string;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Wallet shop');
    /** A card saved by a merchant's payment for this customer; its saved card id. */
    const save = async (customer: Record<string, string>, number: string, key: string) => {
      const res = await t.app.inject({
        method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'x-idempotency-key': key },
        payload: { amount: 1000, currency: 'EUR', allow_future_usage: true, customer, split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card(number) }] },
      });
      const id = res.json().authorization?.partner_transactions?.[0]?.saved_card_id;
      assert.ok(id, res.body);
      return id as string;
    };
    ada = await save({ reference: 'cust-ada', email: 'ada@example.com' }, '4242424242424242', 'save-ada');
    bob = await save({ reference: 'cust-bob', email: 'bob@example.com' }, '5555555555554444', 'save-bob');
    adaExpired = await save({ reference: 'cust-ada', email: 'ada@example.com' }, '4000056655665556', 'save-ada-2');
    await t.testDb.db.query(`UPDATE saved_cards SET expiry_year = '2020' WHERE id = $1`, [adaExpired]);
  });
  after(() => t.close());

  const session = async (customer?: Record<string, string>) => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 2500, currency: 'EUR', ...(customer ? { customer } : {}) } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().widget.data as string;
  };
  const listed = async (data: string) => {
    const res = await t.app.inject({ url: '/checkout/v1/session', headers: { 'x-payd-session': data } });
    assert.equal(res.statusCode, 200, res.body);
    return (res.json().saved_cards as Array<{ id: string }>).map((c) => c.id);
  };
  const submit = (data: string, payload: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': data }, payload });
  const withSaved = (saved_card_id: string, instrument: Record<string, unknown> = { cvv: '123' }) =>
    ({ split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: { type: 'SAVED_CARD', saved_card_id, ...instrument } }] });

  it('lists the cards of the session\'s customer.reference (not another customer\'s, not an expired one); none by email alone or without a customer', async () => {
    assert.deepEqual(await listed(await session({ reference: 'cust-ada' })), [ada]);
    assert.deepEqual(await listed(await session({ reference: 'cust-ada', email: 'bob@example.com' })), [ada], 'the reference decides, whatever the email');
    assert.deepEqual(await listed(await session({ reference: 'cust-bob' })), [bob]);
    assert.deepEqual(await listed(await session({ reference: 'cust-nobody' })), []);
    // The merchant passed the email a guest typed: it opens nobody's wallet.
    assert.deepEqual(await listed(await session({ email: 'ada@example.com' })), [], 'an email alone lists no saved card');
    assert.deepEqual(await listed(await session({ email: 'ADA@example.com' })), []);
    assert.deepEqual(await listed(await session()), []);
  });

  it('refuses another customer\'s saved card, a card found by email alone, an expired one, a MERCHANT initiator and a missing CVC; pays with the customer\'s own', async () => {
    const field = async (data: string, payload: Record<string, unknown>) => expectProblem(await submit(data, payload), 400).invalid_params?.[0]?.name;
    const asAda = await session({ reference: 'cust-ada' });
    assert.equal(await field(asAda, withSaved(bob)), 'split[0].instrument.saved_card_id', 'another customer\'s card');
    assert.equal(await field(asAda, withSaved(adaExpired)), 'split[0].instrument.saved_card_id', 'an expired card');
    assert.equal(await field(await session({ email: 'ada@example.com' }), withSaved(ada)), 'split[0].instrument.saved_card_id', 'the customer named by email alone');
    assert.equal(await field(asAda, withSaved(ada, { initiator: 'MERCHANT' })), 'split[0].instrument.initiator', 'the checkout is the cardholder\'s');
    assert.equal(await field(asAda, withSaved(ada, { initiator: 'MERCHANT', cvv: '123' })), 'split[0].instrument.initiator');
    assert.equal(await field(asAda, withSaved(ada, {})), 'split[0].instrument.cvv', 'the CVC is required');
    assert.equal(await field(asAda, withSaved(ada, { initiator: 'CUSTOMER' })), 'split[0].instrument.cvv');
    // None of these refusals used an attempt of the session: the customer's own card pays.
    const paid = await submit(asAda, withSaved(ada));
    assert.equal(paid.statusCode, 200, paid.body);
    assert.equal(paid.json().authorization_status, 'AUTHORIZED');
    const p = (await t.app.inject({ url: `/v2/payments/${paid.json().payment_id}`, headers: m.auth })).json();
    assert.equal(p.authorization.partner_transactions[0].saved_card_id, ada);
  });

  it('takes the shopper\'s email only for a method that needs it, so no card is saved under an email the shopper typed', async () => {
    const res = await t.app.inject({
      method: 'POST', url: '/v2/client-sessions', headers: m.auth,
      payload: { amount: 2500, currency: 'EUR', allow_future_usage: true, customer: { reference: 'cust-guest' } },
    });
    const data = res.json().widget.data as string;
    const typed = { customer_email: 'ada@example.com', split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card('4242424242424242') }] };
    assert.equal(expectProblem(await submit(data, typed), 400).invalid_params?.[0]?.name, 'customer_email');
    const { rows } = await t.testDb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM saved_cards WHERE customer_email = 'ada@example.com'`);
    assert.equal(rows[0]!.n, 2, 'only the merchant\'s own saves carry that email');
  });
  it('keeps no card on file under an email the shopper typed (a card beside buy-now-pay-later), and takes no save_token from the shopper', async () => {
    const res = await t.app.inject({
      method: 'POST', url: '/v2/client-sessions', headers: m.auth,
      payload: { amount: 9000, currency: 'EUR', allow_future_usage: true, customer: { reference: 'cust-split' } },
    });
    assert.equal(res.statusCode, 200, res.body);
    const data = res.json().widget.data as string;
    const split = [
      { partner: 'bnpl-sim', method: 'INSTALLMENTS_3X', amount: 5000 },
      { partner: 'card-sim', method: 'CARD', amount: 4000, instrument: card('4242424242424242') },
    ];
    // The shopper cannot decide what the merchant keeps on file.
    assert.equal(expectProblem(await submit(data, { split: [split[1]!].map((p) => ({ ...p, amount: 9000, save_token: true })) }), 400).invalid_params?.[0]?.name, 'split[0].save_token');
    const paid = await submit(data, { customer_email: 'mallory@example.com', split });
    assert.equal(paid.statusCode, 200, paid.body);
    assert.equal(paid.json().authorization_status, 'AUTHORIZED', paid.body);
    const p = (await t.app.inject({ url: `/v2/payments/${paid.json().payment_id}`, headers: m.auth })).json();
    const cardTx = p.authorization.partner_transactions.find((x: { partner: string }) => x.partner === 'card-sim');
    assert.equal(cardTx.saved_card_id, undefined, JSON.stringify(cardTx));
    const { rows } = await t.testDb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM saved_cards WHERE customer_email = 'mallory@example.com' OR customer_reference = 'cust-split'`);
    assert.equal(rows[0]!.n, 0, 'no card saved under the typed email');
  });
});
