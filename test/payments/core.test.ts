// Payments through the API: every outcome of the simulated partners, split payments,
// operations, tenant isolation, and bad inputs that change nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CardAcquirerSimulator } from '../../src/partners/simulators/card-acquirer.ts';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const card = (number = '4242424242424242', cvv = '737') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2030', cvv, holder_name: 'Ada Lovelace' });
const gift = (number = '6036280000001234') => ({ type: 'GIFT_CARD', number });
const cardPart = (amount: number, number?: string) => ({ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) });
const giftPart = (amount: number, number?: string) => ({ partner: 'gift-sim', method: 'GIFT_CARD', amount, instrument: gift(number) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('payments', () => {
  let t: TestApp;
  let m: Merchant;
  const pay = async (split: unknown[], extra: Record<string, unknown> = {}, who = m) => {
    const amount = (split as Array<{ amount: number }>).reduce((s, p) => s + p.amount, 0);
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: who.auth, payload: { amount, currency: 'EUR', split, ...extra } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const op = (id: string, kind: string, payload?: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url: `/v2/payments/${id}/${kind}`, headers: { ...m.auth, ...headers }, ...(payload !== undefined ? { payload: payload as object } : {}) });
  const get = async (id: string, headers: Record<string, string> = {}) => (await t.app.inject({ url: `/v2/payments/${id}`, headers: { ...m.auth, ...headers } })).json();

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  it('returns every field of the Payment, keeping no card number or CVV anywhere', async () => {
    const p = await pay([cardPart(12345, '4000000000000416')], {
      order: { reference: 'ord-1', additional_data: { channel: 'web', basket: 3 } },
      browser: { user_agent: 'UA', javascript_enabled: true, screen_width: 390, utc_time_zone: 60 },
      customer: { email: 'ada@example.com', type: 'PERSON' },
    });
    for (const f of ['id', 'created_at', 'version', 'entity_id', 'amount', 'currency', 'allow_future_usage', 'order_reference', 'order', 'capture_mode', 'amounts', 'overview', 'browser', 'split', 'authorization', 'captures', 'voids', 'refunds', 'links']) {
      assert.ok(f in p, `missing ${f}`);
    }
    assert.equal(p.entity_id, m.entityId);
    assert.equal(p.order_reference, 'ord-1');
    assert.deepEqual(Object.keys(p.amounts).sort(), ['authorize_pending', 'available_to_capture', 'available_to_refund', 'available_to_void', 'total_authorized', 'total_captured', 'total_refunded', 'total_voided']);
    assert.deepEqual(p.overview, { consumed: 'NOT', captured: 'NOT', voided: 'NOT', refunded: 'NOT' });
    assert.deepEqual(Object.keys(p.links).sort(), ['capture', 'refund', 'self', 'void']);
    assert.equal(p.links.capture.method, 'POST');
    assert.match(p.links.self.href, new RegExp(`^http://payd.test/v2/payments/${p.id}$`));
    const tx = p.authorization.partner_transactions[0];
    assert.equal(tx.status, 'AUTHORIZED');
    assert.equal(tx.status_code, 'SUCCEEDED');
    assert.equal(tx.card.bin, '400000');
    assert.equal(tx.card.last_four_digits, '0416');
    assert.equal(tx.card.selected_network, 'VISA');
    assert.equal(tx.card.three_ds.flow, 'FRICTIONLESS');
    assert.match(tx.card.three_ds.ds_transaction_id, /^[0-9a-f-]{36}$/);
    const all = await t.testDb.db.query<{ t: string }>(`SELECT concat_ws('|', (SELECT string_agg(row_to_json(x)::text, '') FROM payments x), (SELECT string_agg(row_to_json(x)::text, '') FROM partner_transactions x), (SELECT string_agg(row_to_json(x)::text, '') FROM sim_partner_operations x)) AS t`);
    assert.doesNotMatch(all.rows[0]!.t, /4000000000000416|"cvv"|"737"/);
    assert.doesNotMatch(JSON.stringify(p), /4000000000000416|"cvv"|"737"/);
  });

  it('gives a card the same fingerprint within an entity and different ones across entities', async () => {
    const other = await t.createMerchant('other');
    const fp = (p: { authorization: { partner_transactions: Array<{ card: { fingerprint: string } }> } }) => p.authorization.partner_transactions[0]!.card.fingerprint;
    const a1 = fp(await pay([cardPart(100)]));
    const a2 = fp(await pay([cardPart(100)]));
    const b1 = fp(await pay([cardPart(100)], {}, other));
    assert.equal(a1, a2);
    assert.notEqual(a1, b1);
  });

  it('reports refusals and errors from the acquirer', async () => {
    const declined = await pay([cardPart(1000, '4000000000000002')]);
    assert.equal(declined.authorization.status, 'REFUSED');
    assert.equal(declined.authorization.partner_transactions[0].status_code, 'DO_NOT_HONOR');
    assert.equal((await pay([cardPart(1000, '4000000000009995')])).authorization.partner_transactions[0].status_code, 'INSUFFICIENT_FUNDS');
    assert.equal((await pay([cardPart(1000, '4000000000000119')])).authorization.status, 'ERROR');
    const capture = await op(declined.id, 'captures', { amount: 1000 });
    assert.equal(expectProblem(capture, 400).type, 'urn:eu.service:payment-not-authorized');
  });

  it('suspends on a 3-D Secure challenge and settles when the shopper passes or fails', async () => {
    const p = await pay([cardPart(5000, '4000000000003220')]);
    assert.equal(p.authorization.status, 'PENDING');
    assert.match(p.authorization.redirection.url, /^http:\/\/payd.test\//);
    const acs = t.app.services.partners.get('card-sim') as CardAcquirerSimulator;
    await acs.completeChallenge(p.authorization.partner_transactions[0].partner_reference, true);
    assert.equal((await get(p.id, { 'cache-control': 'max-age=60' })).authorization.status, 'PENDING', 'max-age serves stored data');
    const synced = await get(p.id);
    assert.equal(synced.authorization.status, 'AUTHORIZED');
    assert.equal(synced.authorization.partner_transactions[0].card.three_ds.flow, 'CHALLENGE');
    assert.ok(!synced.authorization.redirection);
    assert.ok(synced.version > p.version);

    const failed = await pay([cardPart(5000, '4000000000003220')]);
    await acs.completeChallenge(failed.authorization.partner_transactions[0].partner_reference, false);
    assert.equal((await get(failed.id)).authorization.status, 'REFUSED');
  });

  it('reverses the authorized parts of a split that is refused', async () => {
    const number = '6036280000009876';
    const p = await pay([giftPart(30000, number), cardPart(2000, '4000000000000002')]);
    assert.equal(p.authorization.status, 'REFUSED');
    assert.equal(p.voids.length, 1);
    assert.equal(p.voids[0].triggered_by, 'SYSTEM');
    assert.equal(p.voids[0].status, 'SUCCESS');
    assert.equal(p.amounts.available_to_capture, 0);
    // The hold was released: the whole 500.00 balance can be spent again.
    assert.equal((await pay([giftPart(50000, number)])).authorization.status, 'AUTHORIZED');
    assert.equal((await pay([giftPart(1000, number)])).authorization.status, 'REFUSED');
  });

  it('captures automatically in AUTOMATIC mode', async () => {
    const p = await pay([cardPart(4200)], { capture_mode: 'AUTOMATIC' });
    assert.equal(p.captures.length, 1);
    assert.equal(p.captures[0].triggered_by, 'SYSTEM');
    assert.equal(p.amounts.total_captured, 4200);
    assert.equal(p.overview.captured, 'FULLY');
  });

  it('leaves a timed-out authorization PENDING until a sync finds it', async () => {
    const p = await pay([cardPart(3000, '4000000000000408')]);
    assert.equal(p.authorization.status, 'PENDING');
    assert.equal(p.amounts.authorize_pending, 3000);
    await sleep(1200);
    const synced = await get(p.id);
    assert.equal(synced.authorization.status, 'AUTHORIZED');
    assert.equal(synced.amounts.total_authorized, 3000);
  });

  it('reports FAILURE and CONFLICT for operations partners refuse', async () => {
    const p = await pay([cardPart(5000, '4000000000000341')]);
    const res = await op(p.id, 'captures', { amount: 5000 });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().captures[0].status, 'FAILURE');
    assert.equal(res.json().amounts.available_to_capture, 5000, 'a failed capture releases its reservation');
    const split = await pay([giftPart(1000), cardPart(4000, '4000000000000341')]);
    const c = (await op(split.id, 'captures', { amount: 5000 })).json();
    assert.equal(c.captures[0].status, 'CONFLICT');
    assert.equal(c.amounts.total_captured, 1000);
  });

  it('keeps amounts consistent through partial captures, refunds and voids', async () => {
    const p = await pay([giftPart(3000), cardPart(7000)]);
    let r = (await op(p.id, 'captures', { amount: 4000, merchant_reference: 'c1' })).json();
    assert.deepEqual(r.captures[0].partner_transactions.map((x: { method: string; amount: number }) => [x.method, x.amount]), [['GIFT_CARD', 3000], ['CARD', 1000]]);
    assert.equal(r.captures[0].merchant_reference, 'c1');
    r = (await op(p.id, 'refunds', { amount: 1500 })).json();
    assert.deepEqual(r.refunds[0].partner_transactions.map((x: { method: string; amount: number }) => [x.method, x.amount]), [['CARD', 1000], ['GIFT_CARD', 500]]);
    r = (await op(p.id, 'voids', {})).json();
    assert.deepEqual(
      { ...r.amounts },
      { authorize_pending: 0, total_authorized: 10000, total_voided: 6000, available_to_void: 0, total_captured: 4000, available_to_capture: 0, total_refunded: 1500, available_to_refund: 2500 },
    );
    assert.deepEqual(r.overview, { consumed: 'FULLY', captured: 'PARTIALLY', voided: 'PARTIALLY', refunded: 'PARTIALLY' });
    expectProblem(await op(p.id, 'captures', { amount: 1 }), 400);
    const over = expectProblem(await op(p.id, 'refunds', { amount: 2501 }), 400);
    assert.equal(over.type, 'urn:eu.service:amount-not-available');
    assert.equal(over.available_amount, 2500);
    const rest = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/refunds`, headers: m.auth });
    assert.equal(rest.statusCode, 200, 'a refund without body refunds the rest');
    assert.equal(rest.json().amounts.available_to_refund, 0);
    assert.match(String(rest.headers['x-created-operation-id']), /^[0-9a-f-]{36}$/);
  });

  it('hides one entity\'s payments from another', async () => {
    const p = await pay([cardPart(1000)]);
    const other = await t.createMerchant('intruder');
    const res = await t.app.inject({ url: `/v2/payments/${p.id}`, headers: other.auth });
    assert.equal(res.statusCode, 404);
    assert.equal(res.body, '');
    expectProblem(await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: other.auth, payload: { amount: 1 } }), 404);
    expectProblem(await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/voids`, headers: other.auth }), 404);
    assert.equal((await get(p.id)).amounts.available_to_capture, 1000);
    const unknown = await t.app.inject({ url: `/v2/payments/${crypto.randomUUID()}`, headers: m.auth });
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.body, '');
  });

  it('refuses bad inputs with a 4xx naming the field, and writes nothing', async () => {
    const count = async () => (await t.testDb.db.query<{ n: string }>(`SELECT concat_ws(',', (SELECT count(*) FROM payments), (SELECT count(*) FROM partner_transactions), (SELECT count(*) FROM payment_operations), (SELECT count(*) FROM sim_partner_operations)) AS n`)).rows[0]!.n;
    const before = await count();
    const base = { amount: 1000, currency: 'EUR', split: [cardPart(1000)] };
    const cases: Array<[unknown, number, RegExp]> = [
      [{ ...base, amount: '1000' }, 400, /amount/],
      [{ ...base, amount: -1 }, 400, /amount/],
      [{ ...base, amount: 0 }, 400, /amount/],
      [{ ...base, amount: 10.5 }, 400, /amount/],
      [{ amount: 1000, currency: 'EUR' }, 400, /split/],
      [{ ...base, amount: 999 }, 400, /split/],
      [{ ...base, currency: 'XXX' }, 400, /currency/],
      [{ ...base, split: [{ ...cardPart(1000), partner: 'nobody' }] }, 400, /split\[0\]\.partner/],
      [{ ...base, split: [{ ...cardPart(1000), method: 'PAYPAL' }] }, 400, /split\[0\]\.method/],
      [{ ...base, currency: 'USD', split: [giftPart(1000)] }, 400, /currency/],
      [{ ...base, split: [{ partner: 'card-sim', method: 'CARD', amount: 1000 }] }, 400, /split\[0\]\.instrument/],
      [{ ...base, split: [cardPart(1000, '4242424242424241')] }, 400, /split\[0\]\.instrument\.number/],
      [{ ...base, amount: 2000, split: [cardPart(1000), cardPart(1000, '5555555555554444')] }, 400, /split/],
      [{ ...base, surprise: true }, 400, /surprise/],
      [{ ...base, split: [{ ...cardPart(1000), instrument: { ...card(), cvv: 12 } }] }, 400, /cvv/],
      [{ ...base, entity_id: crypto.randomUUID() }, 403, /entity_id/],
    ];
    for (const [payload, status, field] of cases) {
      const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: payload as object });
      const p = expectProblem(res, status);
      assert.match(`${p.detail} ${JSON.stringify(p.invalid_params ?? [])}`, field, res.body);
    }
    expectProblem(await t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'content-type': 'text/plain' }, payload: 'amount=1' }), 415);
    expectProblem(await t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'content-type': 'application/json' }, payload: JSON.stringify({ ...base, order: { reference: 'x'.repeat(2_000_000) } }) }), 413);
    const badKey = expectProblem(await t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'x-idempotency-key': 'has space' }, payload: base }), 400);
    assert.equal(badKey.invalid_params?.[0]?.name, 'x-idempotency-key');
    assert.equal(await count(), before);
  });
});
