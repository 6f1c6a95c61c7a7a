// Payment behaviour through the API, once with the simulated partners answering pure
// decisions inline and once with every call recorded in their ledger like a remote
// partner: the full resource shape, card facts (and the card number and CVV kept
// nowhere), every acquirer outcome, 3-D Secure, split reversal (the gift card's hold
// released), automatic capture, timeouts (settled by moving a TestClock, no sleeping),
// failed captures, amounts through partial captures, refunds and voids, amount rules,
// tenant isolation, and bad inputs refused with nothing written.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CardAcquirerSimulator } from '../../src/partners/simulators/card-acquirer.ts';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const CVV = '9173';
const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '11', expiry_year: '2031', cvv: CVV, holder_name: 'Grace Hopper' });
const cardPart = (amount: number, number?: string) => ({ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) });
let giftSeq = 0;
/** A fresh gift card number (balance 500.00). */
const giftNumber = () => `603628${String(++giftSeq).padStart(6, '0')}5555`;
/** A gift card part: a fresh card unless a number is given, so balances never interfere. */
const giftPart = (amount: number, number = giftNumber()) => ({
  partner: 'gift-sim', method: 'GIFT_CARD', amount,
  instrument: { type: 'GIFT_CARD', number },
});
/** How long the card simulator keeps a timed-out call's outcome to itself (its default timeoutResolveMs). */
const TIMEOUT_RESOLVE_MS = 1000;
/** The CVV as a value of its own (not a fragment of a uuid, a hash or a timestamp). */
const CVV_ALONE = new RegExp(`(?<![0-9A-Za-z_.:+-])${CVV}(?![0-9A-Za-z_-])`);

for (const simInline of [true, false]) describe(`payment behaviour (${simInline ? 'inline' : 'recorded'} partner calls)`, () => {
  const clock = new TestClock();
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;

  const create = (split: Array<{ amount: number }>, extra: Record<string, unknown> = {}, who?: Merchant) => {
    const amount = split.reduce((s, p) => s + p.amount, 0);
    return t.app.inject({ method: 'POST', url: '/v2/payments', headers: (who ?? m).auth, payload: { amount, currency: 'EUR', split, ...extra } });
  };
  const pay = async (split: Array<{ amount: number }>, extra: Record<string, unknown> = {}, who?: Merchant) => {
    const res = await create(split, extra, who);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const op = (id: string, kind: string, payload?: object, who?: Merchant) =>
    t.app.inject({ method: 'POST', url: `/v2/payments/${id}/${kind}`, headers: (who ?? m).auth, ...(payload !== undefined ? { payload } : {}) });
  const get = (id: string, headers: Record<string, string> = {}, who?: Merchant) =>
    t.app.inject({ url: `/v2/payments/${id}`, headers: { ...(who ?? m).auth, ...headers } });
  const cardSim = () => t.app.services.partners.get('card-sim') as CardAcquirerSimulator;
  /** The calls of a payment the simulated partners recorded in their own ledger. */
  const simRecords = async (paymentId: string) => Number((await t.testDb.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM sim_partner_operations s
       JOIN partner_transactions x ON x.partner_key = s.key AND x.partner = s.partner
      WHERE x.payment_id = $1`, [paymentId])).rows[0]!.n);

  before(async () => {
    t = await createTestApp({ simInline }, { clock: clock.now });
    m = await t.createMerchant('behaviour');
    other = await t.createMerchant('behaviour-other');
  });
  after(() => t.close());

  it('returns the full Payment shape with every spec field', async () => {
    const order = { reference: 'ord-shape-1', additional_data: { channel: 'web', items: 2 }, net_amount: 10000, tax_amount: 2345 };
    const browser = {
      user_agent: 'Mozilla/5.0', referrer: 'https://shop.example/cart', accept_header: 'text/html', color_depth: 24, java_enabled: false,
      javascript_enabled: true, locale: 'fr-FR', screen_height: 844, screen_width: 390, utc_time_zone: 60,
    };
    const p = await pay([cardPart(12345)], { order, browser, allow_future_usage: true, customer: { email: 'grace@example.com', type: 'PERSON' } });
    assert.match(p.id, UUID);
    assert.match(p.created_at, TS);
    assert.ok(Number.isInteger(p.version) && p.version >= 1);
    assert.equal(p.entity_id, m.entityId);
    assert.equal(p.amount, 12345);
    assert.equal(p.currency, 'EUR');
    assert.equal(p.allow_future_usage, true);
    assert.equal(p.order_reference, 'ord-shape-1');
    assert.deepEqual(p.order, order);
    assert.equal(p.capture_mode, 'MANUAL');
    assert.deepEqual(p.browser, browser);
    assert.deepEqual(p.split, [{ partner: 'card-sim', method: 'CARD', amount: 12345 }]);

    assert.deepEqual(p.amounts, {
      authorize_pending: 0, total_authorized: 12345, total_voided: 0, available_to_void: 12345,
      total_captured: 0, available_to_capture: 12345, total_refunded: 0, available_to_refund: 0,
    });
    assert.equal(Object.keys(p.amounts).length, 8);
    for (const v of Object.values(p.amounts)) assert.ok(Number.isInteger(v));
    assert.deepEqual(p.overview, { consumed: 'NOT', captured: 'NOT', voided: 'NOT', refunded: 'NOT' });

    assert.equal(p.authorization.status, 'AUTHORIZED');
    assert.equal(p.authorization.redirection, undefined);
    assert.equal(p.authorization.partner_transactions.length, 1);
    const tx = p.authorization.partner_transactions[0];
    assert.match(tx.id, UUID);
    assert.match(tx.created_at, TS);
    assert.match(tx.updated_at, TS);
    assert.equal(tx.status, 'AUTHORIZED');
    assert.equal(tx.amount, 12345);
    assert.equal(tx.partner, 'card-sim');
    assert.equal(tx.method, 'CARD');
    assert.equal(typeof tx.partner_reference, 'string');
    assert.ok(tx.partner_reference.length > 0);
    assert.equal(tx.partner_status, 'AUTHORIZED');
    assert.equal(typeof tx.partner_status_description, 'string');
    assert.equal(tx.status_code, 'SUCCEEDED');
    assert.deepEqual(p.captures, []);
    assert.deepEqual(p.voids, []);
    assert.deepEqual(p.refunds, []);

    const self = `http://payd.test/v2/payments/${p.id}`;
    assert.deepEqual(p.links, {
      self: { href: self, method: 'GET' },
      capture: { href: `${self}/captures`, method: 'POST' },
      refund: { href: `${self}/refunds`, method: 'POST' },
      void: { href: `${self}/voids`, method: 'POST' },
    });

    // GET returns the same resource.
    const again = await get(p.id);
    assert.equal(again.statusCode, 200);
    assert.deepEqual(again.json(), p);
  });

  it('shows card facts and keeps the card number and CVV out of every response and table', async () => {
    const number = '5555555555554444';
    const res = await create([cardPart(2500, number)]);
    assert.equal(res.statusCode, 200, res.body);
    const p = res.json();
    const c = p.authorization.partner_transactions[0].card;
    assert.equal(c.bin, '555555');
    assert.equal(c.last_four_digits, '4444');
    assert.equal(c.selected_network, 'MASTERCARD');
    assert.equal(c.expiry_month, '11');
    assert.equal(c.expiry_year, '2031');
    assert.equal(c.holder_name, 'Grace Hopper');
    assert.equal(typeof c.type, 'string');
    assert.equal(typeof c.fingerprint, 'string');
    assert.ok(c.fingerprint.length >= 16);
    assert.ok(!c.fingerprint.includes(number));
    assert.equal(c.three_ds.flow, 'FRICTIONLESS');
    assert.equal(typeof c.three_ds.eci, 'string');
    assert.equal(typeof c.three_ds.version, 'string');
    assert.match(c.three_ds.ds_transaction_id, UUID);
    assert.match(c.three_ds.acs_transaction_id, UUID);
    assert.equal('number' in c, false);
    assert.equal('cvv' in c, false);

    // A Visa card: the BIN is the first six digits, the last four the last four.
    const visaNumber = '4000000000000416';
    const visaRes = await create([cardPart(1000, visaNumber)]);
    assert.equal(visaRes.statusCode, 200, visaRes.body);
    const visa = visaRes.json().authorization.partner_transactions[0].card;
    assert.equal(visa.bin, '400000');
    assert.equal(visa.last_four_digits, '0416');
    assert.equal(visa.selected_network, 'VISA');

    const capture = await op(p.id, 'captures', { amount: 2500 });
    assert.equal(capture.statusCode, 200, capture.body);
    const refund = await op(p.id, 'refunds', { amount: 100 });
    assert.equal(refund.statusCode, 200, refund.body);
    const read = await get(p.id);
    for (const body of [res.body, visaRes.body, capture.body, refund.body, read.body]) {
      for (const n of [number, visaNumber]) assert.ok(!body.includes(n), 'card number in a response');
      assert.doesNotMatch(body, CVV_ALONE, 'CVV in a response');
      assert.doesNotMatch(body, /"cvv"/);
    }
    // Inline, the simulated acquirer answers these pure decisions without a record of its
    // own (its table has rows only when a test elsewhere in this file made it record:
    // 3-D Secure, timeouts); recorded, it keeps the authorization, capture and refund.
    assert.equal(await simRecords(p.id), simInline ? 0 : 3);
    for (const table of ['payments', 'partner_transactions', 'sim_partner_operations', 'payment_operations']) {
      const { rows } = await t.testDb.db.query<{ r: string }>(`SELECT row_to_json(x)::text AS r FROM ${table} x`);
      if (table !== 'sim_partner_operations' || !simInline) assert.ok(rows.length > 0, `${table} has rows`);
      for (const { r } of rows) {
        for (const n of [number, visaNumber]) assert.ok(!r.includes(n), `card number stored in ${table}: ${r}`);
        assert.doesNotMatch(r, CVV_ALONE, `CVV stored in ${table}: ${r}`);
        assert.doesNotMatch(r, /"cvv"/, `cvv field stored in ${table}`);
      }
    }
  });

  it('gives a card a fingerprint stable within an entity and different across entities', async () => {
    const fp = (p: any) => p.authorization.partner_transactions[0].card.fingerprint as string;
    const a1 = fp(await pay([cardPart(100, '4242424242424242')]));
    const a2 = fp(await pay([cardPart(200, '4242424242424242')]));
    const b1 = fp(await pay([cardPart(100, '4242424242424242')], {}, other));
    const b2 = fp(await pay([cardPart(300, '4242424242424242')], {}, other));
    const aOther = fp(await pay([cardPart(100, '5555555555554444')]));
    assert.equal(a1, a2);
    assert.equal(b1, b2);
    assert.notEqual(a1, b1);
    assert.notEqual(a1, aOther);
  });

  it('reports a declined card as REFUSED with the status_code', async () => {
    for (const [number, code] of [['4000000000000002', 'DO_NOT_HONOR'], ['4000000000009995', 'INSUFFICIENT_FUNDS'], ['4000000000000127', 'INCORRECT_CVV']]) {
      const p = await pay([cardPart(1000, number)]);
      assert.equal(p.authorization.status, 'REFUSED');
      assert.equal(p.authorization.partner_transactions[0].status, 'REFUSED');
      assert.equal(p.authorization.partner_transactions[0].status_code, code);
      assert.equal(p.amounts.total_authorized, 0);
      assert.equal(p.amounts.available_to_capture, 0);
    }
  });

  it('reports a processing error as ERROR', async () => {
    const p = await pay([cardPart(1000, '4000000000000119')]);
    assert.equal(p.authorization.status, 'ERROR');
    assert.equal(p.authorization.partner_transactions[0].status, 'ERROR');
    assert.equal(p.authorization.partner_transactions[0].status_code, 'PROCESSING_ERROR');
    assert.equal(p.amounts.total_authorized, 0);
  });

  it('suspends a 3-D Secure challenge as PENDING, and a passed challenge authorizes on a plain GET only', async () => {
    const p = await pay([cardPart(4200, '4000000000003220')]);
    assert.equal(p.authorization.status, 'PENDING');
    assert.match(p.authorization.redirection?.url, /^http:\/\/payd\.test\//, 'the challenge page is on payd\'s base URL');
    assert.equal(typeof p.authorization.redirection.method, 'string');
    const tx = p.authorization.partner_transactions[0];
    assert.equal(tx.status, 'PENDING');
    assert.equal(p.amounts.authorize_pending, 4200);
    assert.equal(p.amounts.total_authorized, 0);

    const done = await cardSim().completeChallenge(tx.partner_reference, true);
    assert.ok(done);

    const cached = await get(p.id, { 'cache-control': 'max-age=60' });
    assert.equal(cached.statusCode, 200);
    assert.equal(cached.json().authorization.status, 'PENDING');

    const fresh = await get(p.id);
    assert.equal(fresh.statusCode, 200);
    const f = fresh.json();
    assert.equal(f.authorization.status, 'AUTHORIZED');
    assert.equal(f.authorization.redirection, undefined);
    assert.equal(f.authorization.partner_transactions[0].status, 'AUTHORIZED');
    assert.equal(f.authorization.partner_transactions[0].card.three_ds.flow, 'CHALLENGE');
    assert.equal(f.amounts.total_authorized, 4200);
    assert.equal(f.amounts.authorize_pending, 0);
    assert.ok(f.version > p.version);
  });

  it('refuses a payment whose 3-D Secure challenge failed', async () => {
    const p = await pay([cardPart(4300, '4000000000003220')]);
    assert.equal(p.authorization.status, 'PENDING');
    await cardSim().completeChallenge(p.authorization.partner_transactions[0].partner_reference, false);
    const f = (await get(p.id)).json();
    assert.equal(f.authorization.status, 'REFUSED');
    assert.equal(f.authorization.partner_transactions[0].status, 'REFUSED');
    assert.equal(f.authorization.partner_transactions[0].status_code, 'AUTHENTICATION_FAILED');
    assert.equal(f.authorization.redirection, undefined);
  });

  it('voids the gift card (SYSTEM) when the card of a split is declined, releasing its hold', async () => {
    const number = giftNumber();
    const p = await pay([giftPart(3000, number), cardPart(7000, '4000000000000002')]);
    assert.equal(p.authorization.status, 'REFUSED');
    const gift = p.authorization.partner_transactions.find((x: any) => x.method === 'GIFT_CARD');
    const cardTx = p.authorization.partner_transactions.find((x: any) => x.method === 'CARD');
    assert.equal(gift.status, 'AUTHORIZED');
    assert.equal(cardTx.status, 'REFUSED');
    assert.equal(p.voids.length, 1);
    const v = p.voids[0];
    assert.equal(v.triggered_by, 'SYSTEM');
    assert.equal(v.status, 'SUCCESS');
    assert.equal(v.amount, 3000);
    assert.equal(v.partner_transactions.length, 1);
    assert.equal(v.partner_transactions[0].partner, 'gift-sim');
    assert.equal(v.partner_transactions[0].status, 'SUCCESS');
    assert.equal(p.amounts.total_voided, 3000);
    assert.equal(p.amounts.available_to_capture, 0);
    assert.equal(p.amounts.available_to_void, 0);
    assert.deepEqual(p.captures, []);
    // The hold was released: the whole 500.00 balance can be spent again, and no more.
    assert.equal((await pay([giftPart(50000, number)])).authorization.status, 'AUTHORIZED');
    assert.equal((await pay([giftPart(1000, number)])).authorization.status, 'REFUSED');
  });

  it('captures an AUTOMATIC payment by itself (triggered_by SYSTEM)', async () => {
    const p = await pay([cardPart(5000)], { capture_mode: 'AUTOMATIC' });
    assert.equal(p.capture_mode, 'AUTOMATIC');
    assert.equal(p.authorization.status, 'AUTHORIZED');
    assert.equal(p.captures.length, 1);
    assert.equal(p.captures[0].triggered_by, 'SYSTEM');
    assert.equal(p.captures[0].status, 'SUCCESS');
    assert.equal(p.captures[0].amount, 5000);
    assert.equal(p.amounts.total_captured, 5000);
    assert.equal(p.amounts.available_to_capture, 0);
    assert.equal(p.overview.captured, 'FULLY');
    const again = (await get(p.id)).json();
    assert.equal(again.captures.length, 1);
  });

  it('records a timed-out authorization PENDING and settles it on a later GET', async () => {
    const p = await pay([cardPart(6100, '4000000000000408')]);
    assert.equal(p.authorization.status, 'PENDING');
    assert.equal(p.authorization.partner_transactions[0].status, 'PENDING');
    assert.equal(p.amounts.authorize_pending, 6100);
    clock.advance(TIMEOUT_RESOLVE_MS + 1); // the simulator reveals the outcome once its time has come
    const f = (await get(p.id)).json();
    assert.equal(f.authorization.status, 'AUTHORIZED');
    assert.equal(f.authorization.partner_transactions[0].status, 'AUTHORIZED');
    assert.equal(f.amounts.total_authorized, 6100);
    assert.equal(f.amounts.authorize_pending, 0);
  });

  it('answers 200 with a FAILURE capture when the issuer declines it', async () => {
    const p = await pay([cardPart(2000, '4000000000000341')]);
    assert.equal(p.authorization.status, 'AUTHORIZED');
    const res = await op(p.id, 'captures', { amount: 2000 });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.match(String(res.headers['x-created-operation-id']), UUID);
    assert.equal(body.captures.length, 1);
    assert.equal(body.captures[0].id, res.headers['x-created-operation-id']);
    assert.equal(body.captures[0].status, 'FAILURE');
    assert.equal(body.captures[0].partner_transactions[0].status, 'FAILURE');
    assert.equal(body.amounts.total_captured, 0);
    assert.equal(body.amounts.available_to_capture, 2000);
  });

  it('marks a capture CONFLICT when the gift card part succeeds and the card part is declined', async () => {
    const p = await pay([giftPart(1500), cardPart(2500, '4000000000000341')]);
    assert.equal(p.authorization.status, 'AUTHORIZED');
    const res = await op(p.id, 'captures', { amount: 4000 });
    assert.equal(res.statusCode, 200, res.body);
    const c = res.json().captures[0];
    assert.equal(c.status, 'CONFLICT');
    const byMethod = Object.fromEntries(c.partner_transactions.map((x: any) => [x.method, x]));
    assert.equal(byMethod.GIFT_CARD.status, 'SUCCESS');
    assert.equal(byMethod.GIFT_CARD.amount, 1500);
    assert.equal(byMethod.CARD.status, 'FAILURE');
    assert.equal(byMethod.CARD.amount, 2500);
    assert.equal(res.json().amounts.total_captured, 1500);
  });

  it('refuses to refund more than was captured (400) and to capture a REFUSED payment (400)', async () => {
    const p = await pay([cardPart(3000)]);
    const cap = await op(p.id, 'captures', { amount: 1000 });
    assert.equal(cap.statusCode, 200, cap.body);
    const refund = expectProblem(await op(p.id, 'refunds', { amount: 1001 }), 400);
    assert.equal(refund.type, 'urn:eu.service:amount-not-available');
    const after = (await get(p.id)).json();
    assert.equal(after.amounts.total_refunded, 0);
    assert.equal(after.refunds.length, 0);

    const refused = await pay([cardPart(3000, '4000000000000002')]);
    const capture = expectProblem(await op(refused.id, 'captures', { amount: 3000 }), 400);
    assert.equal(capture.type, 'urn:eu.service:payment-not-authorized');
    assert.equal((await get(refused.id)).json().captures.length, 0);
  });

  it('isolates tenants: another entity gets a bodiless 404 on GET (as for an unknown id) and a problem 404 on operations', async () => {
    const p = await pay([cardPart(1200)]);
    const read = await get(p.id, {}, other);
    assert.equal(read.statusCode, 404);
    assert.equal(read.body, '');
    const cached = await get(p.id, { 'cache-control': 'max-age=60' }, other);
    assert.equal(cached.statusCode, 404);
    assert.equal(cached.body, '');
    expectProblem(await op(p.id, 'captures', { amount: 1200 }, other), 404);
    expectProblem(await op(p.id, 'refunds', {}, other), 404);
    expectProblem(await op(p.id, 'voids', {}, other), 404);
    expectProblem(await op(p.id, 'voids', undefined, other), 404);
    const mine = (await get(p.id)).json();
    assert.equal(mine.captures.length, 0);
    assert.equal(mine.voids.length, 0);
    assert.equal(mine.refunds.length, 0);
    assert.equal(mine.amounts.available_to_capture, 1200);
    const unknown = await get(crypto.randomUUID());
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.body, '');
  });

  it('keeps amounts consistent through partial captures, refunds and voids', async () => {
    const p = await pay([giftPart(3000), cardPart(7000)]);
    const parts = (o: { partner_transactions: Array<{ method: string; amount: number }> }) => o.partner_transactions.map((x) => [x.method, x.amount]);
    // A capture takes the gift card first, a refund gives back to the card first.
    let r = (await op(p.id, 'captures', { amount: 4000, merchant_reference: 'c1' })).json();
    assert.deepEqual(parts(r.captures[0]), [['GIFT_CARD', 3000], ['CARD', 1000]]);
    assert.equal(r.captures[0].merchant_reference, 'c1');
    r = (await op(p.id, 'refunds', { amount: 1500 })).json();
    assert.deepEqual(parts(r.refunds[0]), [['CARD', 1000], ['GIFT_CARD', 500]]);
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
    const rest = await op(p.id, 'refunds');
    assert.equal(rest.statusCode, 200, 'a refund without body refunds the rest');
    assert.equal(rest.json().amounts.available_to_refund, 0);
    assert.match(String(rest.headers['x-created-operation-id']), UUID);
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
