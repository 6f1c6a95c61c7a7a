// Saved cards through the Stripe connector (docs/decisions.md "Saved cards"), over real
// HTTP to stripe-stateful-mock: save_token attaches the card to a Stripe Customer and
// charges it; payments with the saved card (customer- and merchant-initiated) charge that
// customer's card again; deleting the saved card deletes the card from the Customer.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { startStripeMock, type StripeMock } from '../helpers/stripe-mock.ts';
import { parsePartners } from '../../src/partners/partners-config.ts';
import type { StripeConnector } from '../../src/partners/stripe/stripe-connector.ts';

const SECRET = 'sk_test_payd_saved';
const year = String(new Date().getFullYear() + 2);
const card = (number: string) => ({ type: 'CARD', number, expiry_month: '10', expiry_year: year, cvv: '123' });

describe('saved cards with the Stripe connector (stripe-stateful-mock over HTTP)', () => {
  let mock: StripeMock;
  let t: TestApp;
  let m: Merchant;
  const stripeGet = async (path: string) => {
    const res = await fetch(`${mock.url}${path}`, { headers: { authorization: `Bearer ${SECRET}` } });
    return res.json() as Promise<Record<string, any>>;
  };
  const post = (url: string, payload: unknown) =>
    t.app.inject({ method: 'POST', url, headers: { ...m.auth, 'x-idempotency-key': crypto.randomUUID() }, payload: payload as object });
  const ok = async (res: Awaited<ReturnType<typeof post>>) => {
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const withSaved = (saved_card_id: string, instrument: Record<string, unknown>) => ({
    amount: 3000, currency: 'EUR', customer: { reference: 'stripe-shopper' },
    split: [{ partner: 'stripe', method: 'CARD', amount: 3000, instrument: { type: 'SAVED_CARD', saved_card_id, ...instrument } }],
  });

  before(async () => {
    mock = await startStripeMock();
    t = await createTestApp({
      partners: parsePartners(JSON.stringify([{ name: 'card-sim' }, { name: 'stripe', secret_key_env: 'STRIPE_KEY', api_base: mock.url }]), { STRIPE_KEY: SECRET }),
    });
    m = await t.createMerchant();
  });
  after(async () => {
    await t?.close();
    await mock?.stop();
  });

  let savedId = '';
  let savingCharge: Record<string, any> = {};

  it('save_token: the card is attached to a Stripe Customer and that customer\'s card is charged; payd shows token_saved and saved_card_id', async () => {
    const p = await ok(await post('/v2/payments', {
      amount: 2000, currency: 'EUR', allow_future_usage: true, customer: { reference: 'stripe-shopper', email: 'ada@example.com' },
      split: [{ partner: 'stripe', method: 'CARD', amount: 2000, instrument: card('4242424242424242') }],
    }));
    assert.equal(p.authorization.status, 'AUTHORIZED', JSON.stringify(p.authorization));
    const tx = p.authorization.partner_transactions[0];
    assert.equal(tx.token_saved, true);
    savedId = tx.saved_card_id;
    assert.ok(savedId);
    savingCharge = await stripeGet(`/v1/charges/${tx.partner_reference}`);
    const customerId = savingCharge.source.customer as string;
    assert.match(customerId, /^cus_/);
    assert.equal(savingCharge.metadata.payd_saved, 'true');
    const customer = await stripeGet(`/v1/customers/${customerId}?expand[]=sources`);
    assert.deepEqual(customer.sources.data.map((s: { id: string }) => s.id), [savingCharge.source.id], 'the card is attached to the Customer');
    const saved = await ok(await t.app.inject({ url: `/v2/saved-cards/${savedId}`, headers: m.auth }));
    assert.equal(saved.partner, 'stripe');
    assert.equal(saved.card.last_four_digits, '4242');
  });

  it('a customer-initiated and a merchant-initiated payment charge the same Customer\'s card, marked with their initiator', async () => {
    const cit = await ok(await post('/v2/payments', withSaved(savedId, { cvv: '123' })));
    assert.equal(cit.authorization.status, 'AUTHORIZED', JSON.stringify(cit.authorization));
    assert.equal(cit.authorization.partner_transactions[0].saved_card_id, savedId);
    const citCharge = await stripeGet(`/v1/charges/${cit.authorization.partner_transactions[0].partner_reference}`);
    assert.equal(citCharge.source.id, savingCharge.source.id);
    assert.equal(citCharge.source.customer, savingCharge.source.customer);
    assert.equal(citCharge.metadata.payd_initiator, 'CUSTOMER');
    assert.equal(citCharge.captured, false);

    const mit = await ok(await post('/v2/payments', withSaved(savedId, { initiator: 'MERCHANT' })));
    assert.equal(mit.authorization.status, 'AUTHORIZED');
    const mitCharge = await stripeGet(`/v1/charges/${mit.authorization.partner_transactions[0].partner_reference}`);
    assert.equal(mitCharge.metadata.payd_initiator, 'MERCHANT');
    assert.equal(mitCharge.source.id, savingCharge.source.id);
    const captured = await ok(await post(`/v2/payments/${mit.id}/captures`, { amount: 3000 }));
    assert.equal(captured.amounts.total_captured, 3000);
    assert.equal((await stripeGet(`/v1/charges/${mitCharge.id}`)).captured, true);
  });

  it('a card Stripe declines is not saved', async () => {
    const p = await ok(await post('/v2/payments', {
      amount: 2000, currency: 'EUR', allow_future_usage: true, customer: { reference: 'stripe-declined' },
      split: [{ partner: 'stripe', method: 'CARD', amount: 2000, instrument: card('4000000000000002') }],
    }));
    assert.equal(p.authorization.status, 'REFUSED');
    assert.equal(p.authorization.partner_transactions[0].token_saved, false);
    assert.deepEqual((await ok(await t.app.inject({ url: '/v2/saved-cards?customer_reference=stripe-declined', headers: m.auth }))).data, []);
  });

  it('deleting the saved card deletes it from the Stripe Customer; the connector then refuses its reference', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: `/v2/saved-cards/${savedId}`, headers: m.auth });
    assert.equal(res.statusCode, 200, res.body);
    const customer = await stripeGet(`/v1/customers/${savingCharge.source.customer}?expand[]=sources`);
    assert.deepEqual(customer.sources.data, [], 'the card is no longer attached');
    assert.equal((await post('/v2/payments', withSaved(savedId, {}))).statusCode, 404);
    // Straight to the connector: a reference whose card is gone, and one Stripe never made.
    const stripe = t.app.services.partners.get('stripe') as StripeConnector;
    for (const reference of [savingCharge.id as string, 'ch_unknown']) {
      const r = await stripe.authorize({ key: crypto.randomUUID(), entityId: m.entityId, method: 'CARD', amount: 1000, currency: 'EUR',
        instrument: { type: 'SAVED_CARD', reference, initiator: 'MERCHANT' }, return_url: 'http://payd.test/r' });
      assert.equal(r.outcome, 'REFUSED', JSON.stringify(r));
      assert.equal(r.status_code, 'INVALID_TOKEN');
    }
  });
});
