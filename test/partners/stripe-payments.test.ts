// payd with a Stripe partner configured (PAYD_PARTNERS), over real HTTP to
// stripe-stateful-mock: a payment split between stripe and gift-sim end to end, a
// decline, a void, the charge's state at "Stripe" checked after each step, and the
// partner telemetry (calls counted by partner and outcome; a Stripe that cannot be
// reached leaves the payment PENDING, never REFUSED).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { startStripeMock, type StripeMock } from '../helpers/stripe-mock.ts';
import { freePort } from '../helpers/processes.ts';
import { parsePartners } from '../../src/partners/partners-config.ts';
import { loadConfig } from '../../src/config.ts';

const SECRET = 'sk_test_payd_e2e';
const year = String(new Date().getFullYear() + 2);
const card = (number: string) => ({ type: 'CARD', number, expiry_month: '11', expiry_year: year, cvv: '123' });

describe('payd with a Stripe partner (stripe-stateful-mock over HTTP)', () => {
  let mock: StripeMock;
  let t: TestApp;
  let m: Merchant;
  const stripeGet = async (path: string) => {
    const res = await fetch(`${mock.url}${path}`, { headers: { authorization: `Bearer ${SECRET}` } });
    return res.json() as Promise<Record<string, unknown>>;
  };
  const post = (url: string, payload: unknown) => t.app.inject({ method: 'POST', url, headers: { ...m.auth, 'idempotency-key': crypto.randomUUID() }, payload: payload as object });

  before(async () => {
    mock = await startStripeMock();
    t = await createTestApp({
      partners: parsePartners(JSON.stringify([
        { name: 'card-sim' }, { name: 'gift-sim' }, { name: 'stripe', secret_key_env: 'STRIPE_KEY', api_base: mock.url },
      ]), { STRIPE_KEY: SECRET }),
    });
    m = await t.createMerchant();
  });
  after(async () => {
    await t?.close();
    await mock?.stop();
  });

  it('eligibility offers stripe for cards beside the simulators', async () => {
    const res = await post('/v2/eligible-solutions', { amount: 5000, currency: 'EUR' });
    assert.equal(res.statusCode, 200, res.body);
    const partners = (res.json().eligible_solutions as { partner: string; method: string }[]).map((s) => `${s.partner}/${s.method}`);
    assert.ok(partners.includes('stripe/CARD'), partners.join(', '));
    assert.ok(!partners.includes('bnpl-sim/INSTALLMENTS_3X'), 'bnpl-sim is not configured');
  });

  it('a split stripe + gift-sim payment: authorized, captured, refunded card first; Stripe holds the same amounts', async () => {
    const created = await post('/v2/payments', {
      amount: 9000, currency: 'EUR', capture_mode: 'MANUAL',
      split: [
        { partner: 'gift-sim', method: 'GIFT_CARD', amount: 3000, instrument: { type: 'GIFT_CARD', number: '6036280000007777' } },
        { partner: 'stripe', method: 'CARD', amount: 6000, instrument: card('4242424242424242') },
      ],
    });
    assert.equal(created.statusCode, 200, created.body);
    const p = created.json();
    assert.equal(p.authorization.status, 'AUTHORIZED', JSON.stringify(p.authorization));
    const stripeTx = (p.authorization.partner_transactions as { partner: string; partner_reference: string; card?: { type: string; last_four_digits: string; country_code?: string } }[])
      .find((x) => x.partner === 'stripe')!;
    assert.match(stripeTx.partner_reference, /^ch_/);
    assert.equal(stripeTx.card!.last_four_digits, '4242');
    assert.equal(stripeTx.card!.type, 'CREDIT', 'the funding type comes from Stripe');
    assert.equal(stripeTx.card!.country_code, 'US', 'the issuer country comes from Stripe');
    let charge = await stripeGet(`/v1/charges/${stripeTx.partner_reference}`);
    assert.equal(charge.captured, false);
    assert.equal(charge.amount, 6000);
    assert.equal((charge.metadata as Record<string, string>).payd_entity, m.entityId);

    const capture = await post(`/v2/payments/${p.id}/captures`, { amount: 9000 });
    assert.equal(capture.statusCode, 200, capture.body);
    assert.equal(capture.json().amounts.total_captured, 9000);
    charge = await stripeGet(`/v1/charges/${stripeTx.partner_reference}`);
    assert.equal(charge.captured, true);
    assert.equal(charge.amount_captured, 6000);

    const refund = await post(`/v2/payments/${p.id}/refunds`, { amount: 5000 });
    assert.equal(refund.statusCode, 200, refund.body);
    charge = await stripeGet(`/v1/charges/${stripeTx.partner_reference}`);
    assert.equal(charge.amount_refunded, 5000, 'the card is refunded first');
    const rest = await post(`/v2/payments/${p.id}/refunds`, { amount: 4000 });
    assert.equal(rest.statusCode, 200, rest.body);
    assert.equal(rest.json().amounts.total_refunded, 9000);
    charge = await stripeGet(`/v1/charges/${stripeTx.partner_reference}`);
    assert.equal(charge.amount_refunded, 6000, 'card 1000 more, the gift card the other 3000');
  });

  it('a Stripe decline is a REFUSED payment with the decline code; a void releases the hold at Stripe', async () => {
    const declined = await post('/v2/payments', { amount: 2000, currency: 'EUR', split: [{ partner: 'stripe', method: 'CARD', amount: 2000, instrument: card('4000000000009995') }] });
    assert.equal(declined.statusCode, 200, declined.body);
    assert.equal(declined.json().authorization.status, 'REFUSED');
    assert.equal(declined.json().authorization.partner_transactions[0].status_code, 'INSUFFICIENT_FUNDS');

    const held = await post('/v2/payments', { amount: 2500, currency: 'USD', capture_mode: 'MANUAL', split: [{ partner: 'stripe', method: 'CARD', amount: 2500, instrument: card('5555555555554444') }] });
    assert.equal(held.json().authorization.status, 'AUTHORIZED', held.body);
    const v = await post(`/v2/payments/${held.json().id}/voids`, {});
    assert.equal(v.statusCode, 200, v.body);
    const ref = held.json().authorization.partner_transactions[0].partner_reference as string;
    const charge = await stripeGet(`/v1/charges/${ref}`);
    assert.equal(charge.captured, false);
    assert.equal(charge.amount_refunded, 2500, 'the hold is released');
  });

  it('a partial capture at Stripe (which captures a charge once) releases the rest: the payment says 0 is left to capture, and a second capture is refused, not sent', async () => {
    const held = await post('/v2/payments', { amount: 5000, currency: 'EUR', capture_mode: 'MANUAL', split: [{ partner: 'stripe', method: 'CARD', amount: 5000, instrument: card('4242424242424242') }] });
    assert.equal(held.json().authorization.status, 'AUTHORIZED', held.body);
    const id = held.json().id as string;
    const cap = await post(`/v2/payments/${id}/captures`, { amount: 3000 });
    assert.equal(cap.statusCode, 200, cap.body);
    const p = cap.json();
    assert.equal(p.amounts.total_captured, 3000, cap.body);
    assert.equal(p.amounts.available_to_capture, 0, `the rest was released by Stripe: ${JSON.stringify(p.amounts)}`);
    assert.equal(p.amounts.total_voided, 2000);
    assert.deepEqual(p.voids.map((v: Record<string, unknown>) => [v.amount, v.status, v.triggered_by]), [[2000, 'SUCCESS', 'SYSTEM']]);
    assert.equal(p.amounts.available_to_refund, 3000);
    // The capture's answer names the capture.
    assert.equal(cap.headers['x-created-operation-id'], p.captures[0].id);
    const again = await post(`/v2/payments/${id}/captures`, { amount: 2000 });
    assert.equal(again.statusCode, 400, again.body);
    const after = (await t.app.inject({ url: `/v2/payments/${id}`, headers: m.auth })).json();
    assert.deepEqual(after.captures.map((c: Record<string, unknown>) => c.status), ['SUCCESS'], 'no FAILURE capture was sent');
    const charge = await stripeGet(`/v1/charges/${p.authorization.partner_transactions[0].partner_reference}`);
    assert.equal(charge.amount_captured ?? charge.amount, 3000);
    // A refund of what was captured still works.
    const refund = await post(`/v2/payments/${id}/refunds`, { amount: 3000 });
    assert.equal(refund.statusCode, 200, refund.body);
    assert.equal(refund.json().amounts.total_refunded, 3000, refund.body);
  });

  it('counts partner calls by partner and outcome in /metrics (inline answers too), and shows the webhook backlog', async () => {
    // card-sim answers this one in process (an inline answer): it is counted all the same.
    const sim = await post('/v2/payments', { amount: 1200, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 1200, instrument: card('4242424242424242') }] });
    assert.equal(sim.json().authorization.status, 'AUTHORIZED', sim.body);
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.match(res.body, /payd_partner_calls_total\{partner="card-sim",call="authorize",outcome="SUCCESS"\} 1/);
    assert.match(res.body, /payd_webhook_deliveries_pending \d+/);
    assert.match(res.body, /payd_webhook_oldest_due_seconds \d+/);
    assert.match(res.body, /payd_partner_calls_total\{partner="stripe",call="authorize",outcome="SUCCESS"\} \d+/);
    assert.match(res.body, /payd_partner_calls_total\{partner="stripe",call="authorize",outcome="REFUSED"\} 1/);
    assert.match(res.body, /payd_partner_call_duration_seconds_count\{partner="stripe",call="capture"\} \d+/);
    // Operations by final status (the split's capture and two refunds, the void, the partial
    // capture with its release and refund, above), and those still PENDING.
    assert.match(res.body, /payd_operations_total\{kind="CAPTURE",status="SUCCESS"\} 2\n/);
    assert.match(res.body, /payd_operations_total\{kind="REFUND",status="SUCCESS"\} 3\n/);
    assert.match(res.body, /payd_operations_total\{kind="VOID",status="SUCCESS"\} 2\n/);
    assert.match(res.body, /payd_operations_pending\{kind="CAPTURE"\} 0\n/);
    assert.match(res.body, /payd_operations_oldest_pending_seconds 0\n/);
  });
});

describe('a Stripe partner that cannot be reached', () => {
  it('leaves the payment PENDING (outcome unknown), counts the failure, never declines the shopper', async () => {
    const dead = await freePort();
    const t = await createTestApp({
      partnerTimeoutMs: 3000,
      partners: parsePartners(JSON.stringify([{ name: 'stripe', secret_key: 'sk_test_x', api_base: `http://127.0.0.1:${dead}` }]), {}),
    });
    try {
      const m = await t.createMerchant();
      const res = await t.app.inject({
        method: 'POST', url: '/v2/payments', headers: m.auth,
        payload: { amount: 2000, currency: 'EUR', split: [{ partner: 'stripe', method: 'CARD', amount: 2000, instrument: card('4242424242424242') }] },
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().authorization.status, 'PENDING');
      const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
      assert.match(metrics.body, /payd_partner_calls_total\{partner="stripe",call="authorize",outcome="exception"\} 1/);
    } finally {
      await t.close();
    }
  });
});

describe('Stripe notifications (POST /partners/stripe/webhooks)', () => {
  it('a signed charge.succeeded settles the PENDING authorization it names, once; a forged one is 400', async () => {
    const dead = await freePort();
    const webhookSecret = 'whsec_payd_test_secret';
    const t = await createTestApp({
      partnerTimeoutMs: 2000,
      partners: parsePartners(JSON.stringify([{ name: 'stripe', secret_key: 'sk_test_x', webhook_secret: webhookSecret, api_base: `http://127.0.0.1:${dead}` }]), {}),
    });
    try {
      const m = await t.createMerchant();
      const created = await t.app.inject({
        method: 'POST', url: '/v2/payments', headers: m.auth,
        payload: { amount: 2000, currency: 'EUR', capture_mode: 'MANUAL', split: [{ partner: 'stripe', method: 'CARD', amount: 2000, instrument: card('4242424242424242') }] },
      });
      const id = created.json().id as string;
      assert.equal(created.json().authorization.status, 'PENDING');
      const { rows } = await t.testDb.db.query<{ partner_key: string }>('SELECT partner_key FROM partner_transactions WHERE payment_id = $1', [id]);
      const charge = {
        id: 'ch_from_webhook', object: 'charge', amount: 2000, amount_captured: 0, amount_refunded: 0, captured: false, currency: 'eur', status: 'succeeded',
        metadata: { payd_key: rows[0]!.partner_key }, payment_method_details: { card: { brand: 'visa', country: 'FR', funding: 'debit', last4: '4242' } },
      };
      const payload = JSON.stringify({ id: 'evt_1', object: 'event', type: 'charge.succeeded', data: { object: charge } });
      const { default: Stripe } = await import('stripe');
      const header = new Stripe('sk_test_x').webhooks.generateTestHeaderString({ payload, secret: webhookSecret });
      const send = (h: string, body = payload) => t.app.inject({ method: 'POST', url: '/partners/stripe/webhooks', headers: { 'content-type': 'application/json', 'stripe-signature': h }, payload: body });

      const forged = await send(header.replace(/v1=[0-9a-f]+/, `v1=${'0'.repeat(64)}`));
      assert.equal(forged.statusCode, 400, forged.body);
      assert.equal((await send(header, payload.replace('2000', '2001'))).statusCode, 400, 'a changed body does not verify');

      const first = await send(header);
      assert.equal(first.statusCode, 200, first.body);
      assert.deepEqual(first.json(), { received: true, applied: 1 });
      const after1 = (await t.app.inject({ method: 'GET', url: `/v2/payments/${id}`, headers: m.auth })).json();
      assert.equal(after1.authorization.status, 'AUTHORIZED');
      assert.equal(after1.authorization.partner_transactions[0].partner_reference, 'ch_from_webhook');
      assert.equal(after1.amounts.available_to_capture, 2000);

      // Delivered again (partners deliver at least once): nothing changes.
      assert.equal((await send(header)).statusCode, 200);
      const after2 = (await t.app.inject({ method: 'GET', url: `/v2/payments/${id}`, headers: m.auth })).json();
      assert.deepEqual(after2.amounts, after1.amounts);
      const ledger = await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM partner_transactions WHERE payment_id = $1', [id]);
      assert.equal(ledger.rows[0]!.n, 1);

      const unknown = await t.app.inject({ method: 'POST', url: '/partners/adyen/webhooks', headers: { 'content-type': 'application/json' }, payload: '{}' });
      assert.equal(unknown.statusCode, 404);
    } finally {
      await t.close();
    }
  });
});

describe('PAYD_PARTNERS', () => {
  it('refuses what cannot run with a message naming the entry and the field', () => {
    const bad: [string, Record<string, string>, RegExp][] = [
      ['not json', {}, /cannot be read|not JSON/],
      ['[]', {}, /non-empty JSON array/],
      ['[{"name":"stripe"}]', {}, /PAYD_PARTNERS\[0\]: a Stripe secret key/],
      ['[{"name":"stripe","secret_key_env":"NOPE"}]', {}, /PAYD_PARTNERS\[0\]\.secret_key_env names NOPE, which is not set/],
      ['[{"name":"card-sim"},{"name":"card-sim"}]', {}, /PAYD_PARTNERS\[1\]\.name card-sim is listed twice/],
      ['[{"name":"x","connector":"adyen"}]', {}, /PAYD_PARTNERS\[0\]\.connector must be one of card-sim, gift-sim, bnpl-sim, stripe/],
      ['[{"name":"stripe","secret_key":"sk_test_1","api_base":"ftp://x"}]', {}, /api_base must be an http\(s\) URL/],
    ];
    for (const [raw, env, message] of bad) {
      assert.throws(() => loadConfig({ PAYD_PARTNERS: raw, ...env }), message, raw);
    }
    assert.equal(loadConfig({}).partners, undefined, 'unset: the simulators');
  });
});
