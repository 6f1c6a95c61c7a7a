// Client sessions: creation (every field, the defaults, eligibility, a HOSTED_PAGE
// session's hosted page link), the refusal of bad bodies naming the field, reading, the
// move to SUBMITTED when a payment completes the session, abort rules, expiry (a TestClock
// moved past expires_at, no sleeping), mismatches, tenant isolation and the widget
// credential.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TTL_MS = 30 * 60_000;
const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });

describe('client sessions', () => {
  const clock = new TestClock();
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;

  const create = async (extra: Record<string, unknown> = {}, who?: Merchant) => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: (who ?? m).auth, payload: { amount: 10000, currency: 'EUR', ...extra } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const read = (id: string, who?: Merchant) => t.app.inject({ url: `/v2/client-sessions/${id}`, headers: (who ?? m).auth });
  const abort = (id: string, who?: Merchant, status = 'ABORTED_BY_MERCHANT') =>
    t.app.inject({ method: 'POST', url: `/v2/client-sessions/${id}/abort`, headers: (who ?? m).auth, payload: { status } });
  const payFor = (session: { id: string; amount: number }, number = '4242424242424242', amount = session.amount) =>
    t.app.inject({
      method: 'POST', url: '/v2/payments', headers: m.auth,
      payload: { amount, currency: 'EUR', client_session_id: session.id, split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) }] },
    });

  before(async () => {
    t = await createTestApp({}, { clock: clock.now });
    m = await t.createMerchant('sessions');
    other = await t.createMerchant('sessions-other');
  });
  after(() => t.close());

  it('creates a session with every field, a widget, eligible solutions and only a self link', async () => {
    const expiresAt = new Date(clock.now() + 2 * 3600_000).toISOString();
    const order = {
      reference: 'cs-order-1', additional_data: { channel: 'app', basket: 2 }, net_amount: 8000, tax_amount: 2000,
      billing_address: { gender: 'FEMALE', first_name: 'Ada', last_name: 'Lovelace', address_lines: ['1 rue de la Paix'], city: 'Paris', postal_code: '75002', country_code: 'FR', province_code: 'FR-75' },
    };
    const s = await create({
      entity_id: m.entityId, capture_mode: 'MANUAL', integration_mode: 'EMBEDDED', allow_future_usage: true, order,
      expires_at: expiresAt, shopper_redirection_url: 'https://shop.example/return?x=1',
    });
    assert.match(s.id, UUID);
    assert.equal(s.status, 'CREATED');
    assert.equal(s.amount, 10000);
    assert.equal(s.currency, 'EUR');
    assert.equal(s.entity_id, m.entityId);
    assert.equal(s.capture_mode, 'MANUAL');
    assert.equal(s.integration_mode, 'EMBEDDED');
    assert.equal(s.allow_future_usage, true);
    assert.deepEqual(s.order, order);
    assert.equal(Date.parse(s.expires_at), Date.parse(expiresAt));
    assert.equal(s.shopper_redirection_url, 'https://shop.example/return?x=1');
    assert.equal(s.payment_id, undefined);

    assert.equal(typeof s.widget.data, 'string');
    assert.ok(s.widget.data.length > 20);
    assert.ok(!s.widget.data.includes(m.apiKey));
    assert.equal(s.widget.js_url, 'http://payd.test/checkout/widget.js');

    assert.ok(Array.isArray(s.eligible_solutions));
    for (const e of s.eligible_solutions) {
      assert.deepEqual(Object.keys(e).sort(), ['method', 'partner']);
      assert.equal(typeof e.partner, 'string');
      assert.equal(typeof e.method, 'string');
    }
    const pairs = s.eligible_solutions.map((e: any) => `${e.partner}/${e.method}`).sort();
    assert.deepEqual(pairs, ['bnpl-sim/INSTALLMENTS_3X', 'bnpl-sim/INSTALLMENTS_4X', 'card-sim/CARD', 'gift-sim/GIFT_CARD']);

    // Spec: "Keys seen: self (GET), abort (POST), payment (GET ...); abort and payment appear
    // only when a payment exists": a new session has only self (issue 44, item 6).
    const self = `http://payd.test/v2/client-sessions/${s.id}`;
    assert.deepEqual(s.links, { self: { href: self, method: 'GET' } });

    // Eligibility follows the partners' limits (USD: cards only; BNPL starts at 50.00).
    const usd = await create({ currency: 'USD' });
    assert.deepEqual(usd.eligible_solutions, [{ partner: 'card-sim', method: 'CARD' }]);
    const small = await create({ amount: 2500 });
    assert.ok(small.eligible_solutions.some((x: { partner: string; method: string }) => x.partner === 'card-sim' && x.method === 'CARD'));
    assert.ok(small.eligible_solutions.every((x: { method: string }) => !x.method.startsWith('INSTALLMENTS')), 'BNPL starts at 50.00');
  });

  it('defaults to MANUAL, EMBEDDED, no future usage, and an expiry 30 minutes ahead by the app\'s clock', async () => {
    const before = clock.now();
    const s = await create();
    const after = clock.now();
    assert.equal(s.capture_mode, 'MANUAL');
    assert.equal(s.integration_mode, 'EMBEDDED');
    assert.equal(s.allow_future_usage, false);
    const exp = Date.parse(s.expires_at);
    assert.ok(before + TTL_MS <= exp && exp <= after + TTL_MS, `${s.expires_at} not 30 minutes after ${new Date(before).toISOString()}..${new Date(after).toISOString()}`);
  });

  it('gives a HOSTED_PAGE session its hosted page link after self (no abort before a payment exists)', async () => {
    const s = await create({ integration_mode: 'HOSTED_PAGE' });
    assert.equal(s.integration_mode, 'HOSTED_PAGE');
    assert.deepEqual(Object.keys(s.links), ['self', 'hosted_page']);
    assert.equal(s.links.hosted_page.href, `http://payd.test/checkout/pay#session=${s.widget.data}`);
  });

  it('refuses bad session bodies naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ expires_at: new Date(clock.now() - 1000).toISOString() }, 'expires_at'],
      [{ expires_at: new Date(clock.now() + 25 * 3600_000).toISOString() }, 'expires_at'],
      [{ shopper_redirection_url: 'javascript:alert(1)' }, 'shopper_redirection_url'],
      [{ amount: '2500' }, 'amount'],
      [{ capture_mode: 'LATER' }, 'capture_mode'],
      [{ order: { reference: 5 } }, 'order.reference'],
    ];
    for (const [extra, field] of cases) {
      const res = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 2500, currency: 'EUR', ...extra } });
      const p = expectProblem(res, 400);
      assert.ok(p.invalid_params?.some((x) => x.name === field), res.body);
    }
  });

  it('reads a session back with GET', async () => {
    const s = await create({ order: { reference: 'get-me' } });
    const res = await read(s.id);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), s);
  });

  it('moves to SUBMITTED with payment_id and a payment link once a payment uses it; no abort link while the payment holds money', async () => {
    const s = await create({ amount: 2500 });
    const paid = await payFor(s);
    assert.equal(paid.statusCode, 200, paid.body);
    const p = paid.json();
    assert.equal(p.client_session_id, s.id);
    const after = (await read(s.id)).json();
    assert.equal(after.status, 'SUBMITTED');
    assert.equal(after.payment_id, p.id);
    const self = `http://payd.test/v2/client-sessions/${s.id}`;
    assert.equal(p.authorization.status, 'AUTHORIZED');
    assert.deepEqual(after.links, {
      self: { href: self, method: 'GET' },
      payment: { href: `http://payd.test/v2/payments/${p.id}`, method: 'GET' },
    });
    // A second payment on a SUBMITTED session is refused.
    expectProblem(await payFor(s), 400);
  });

  it('a payment naming a client session that does not exist, or another entity\'s, is the spec\'s 404 with no body', async () => {
    // Spec, POST /v2/payments: "Errors: 400, 404 (no body), 409 (idempotency violation), 500, 503."
    const theirs = await create({ amount: 2600 }, other);
    for (const id of ['9b0f7c4e-3f55-4cc8-9a52-1d0f0c8f8a10', theirs.id]) {
      const res = await payFor({ id, amount: 2600 });
      assert.equal(res.statusCode, 404, res.body);
      assert.equal(res.body, '');
    }
    assert.equal((await read(theirs.id, other)).json().status, 'CREATED', 'the other entity\'s session is untouched');
  });

  it('a payment takes its session\'s capture_mode; one that contradicts it is refused', async () => {
    const s = await create({ amount: 2700, capture_mode: 'AUTOMATIC' });
    const contradicting = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: m.auth,
      payload: { amount: 2700, currency: 'EUR', capture_mode: 'MANUAL', client_session_id: s.id, split: [{ partner: 'card-sim', method: 'CARD', amount: 2700, instrument: card() }] },
    });
    const p = expectProblem(contradicting, 400);
    assert.ok(p.invalid_params?.some((x) => x.name === 'capture_mode'), contradicting.body);
    assert.equal((await read(s.id)).json().status, 'CREATED', 'nothing was written');
    const paid = await payFor(s);
    assert.equal(paid.statusCode, 200, paid.body);
    assert.equal(paid.json().capture_mode, 'AUTOMATIC');
    const stored = await t.app.inject({ url: `/v2/payments/${paid.json().id}`, headers: m.auth });
    assert.equal(stored.json().amounts.total_captured, 2700, 'captured automatically');
  });

  it('aborts a CREATED session, and aborting it again changes nothing; an abort to another status is refused', async () => {
    const s = await create();
    const first = await abort(s.id);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().status, 'ABORTED_BY_MERCHANT');
    assert.equal(first.json().id, s.id);
    const again = await abort(s.id);
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json(), first.json());
    const { rows } = await t.testDb.db.query<{ version: number }>('SELECT version FROM client_sessions WHERE id = $1', [s.id]);
    const v = rows[0]!.version;
    await abort(s.id);
    const { rows: rows2 } = await t.testDb.db.query<{ version: number }>('SELECT version FROM client_sessions WHERE id = $1', [s.id]);
    assert.equal(rows2[0]!.version, v);
    assert.equal((await read(s.id)).json().status, 'ABORTED_BY_MERCHANT');
    expectProblem(await abort(s.id, m, 'CREATED'), 400);
  });

  it('refuses to abort a SUBMITTED session whose payment is AUTHORIZED', async () => {
    const s = await create({ amount: 3100 });
    const paid = await payFor(s);
    assert.equal(paid.json().authorization.status, 'AUTHORIZED');
    const p = expectProblem(await abort(s.id), 400);
    assert.equal(p.type, 'urn:eu.service:client-session-status');
    assert.equal(typeof p.detail, 'string');
    assert.equal((await read(s.id)).json().status, 'SUBMITTED');
  });

  it('lets a SUBMITTED session whose payment was refused be aborted', async () => {
    const s = await create({ amount: 3200 });
    const paid = await payFor(s, '4000000000000002');
    assert.equal(paid.json().authorization.status, 'REFUSED');
    // Once a payment exists, the abort link shows exactly when the abort is accepted: here, with the payment link.
    const self = `http://payd.test/v2/client-sessions/${s.id}`;
    assert.deepEqual((await read(s.id)).json().links, {
      self: { href: self, method: 'GET' },
      abort: { href: `${self}/abort`, method: 'POST' },
      payment: { href: `http://payd.test/v2/payments/${paid.json().id}`, method: 'GET' },
    });
    const res = await abort(s.id);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, 'ABORTED_BY_MERCHANT');
    assert.equal(res.json().links.abort, undefined, 'nothing left to abort');
  });

  it('expires once the clock passes expires_at: EXPIRED on read, abort 400, payment 400', async () => {
    const s = await create({ amount: 2500, expires_at: new Date(clock.now() + 60_000).toISOString() });
    assert.equal(s.status, 'CREATED');
    assert.equal((await read(s.id)).json().status, 'CREATED', 'not before its time');
    clock.advance(60_001);
    assert.equal((await read(s.id)).json().status, 'EXPIRED');
    expectProblem(await abort(s.id), 400);
    const p = expectProblem(await payFor(s), 400);
    assert.ok(p.invalid_params?.some((x) => x.name === 'client_session_id'), JSON.stringify(p));
    assert.equal((await read(s.id)).json().status, 'EXPIRED');
  });

  it('refuses a payment on an aborted session', async () => {
    const s = await create({ amount: 2500 });
    assert.equal((await abort(s.id)).statusCode, 200);
    const before = await t.testDb.db.query<{ n: number | string }>('SELECT count(*) AS n FROM payments');
    const p = expectProblem(await payFor(s), 400);
    assert.ok(p.invalid_params?.some((x) => x.name === 'client_session_id'), JSON.stringify(p));
    const afterCount = await t.testDb.db.query<{ n: number | string }>('SELECT count(*) AS n FROM payments');
    assert.equal(Number(afterCount.rows[0]!.n), Number(before.rows[0]!.n));
    const after = (await read(s.id)).json();
    assert.equal(after.status, 'ABORTED_BY_MERCHANT');
    assert.equal(after.payment_id, undefined);
  });

  it('refuses a payment whose amount differs from the session, below or above it', async () => {
    const s = await create({ amount: 2500 });
    for (const amount of [2400, 2600]) {
      const p = expectProblem(await payFor(s, undefined, amount), 400);
      assert.equal(p.invalid_params?.[0]?.name, 'client_session_id', JSON.stringify(p));
    }
    const after = (await read(s.id)).json();
    assert.equal(after.status, 'CREATED');
    assert.equal(after.payment_id, undefined);
  });

  it("hides another entity's session: GET 404 with an empty body", async () => {
    const s = await create();
    const res = await read(s.id, other);
    assert.equal(res.statusCode, 404);
    assert.equal(res.body, '');
    const ab = await abort(s.id, other);
    assert.equal(ab.statusCode, 404);
    assert.equal(ab.body, '');
    assert.equal((await read(s.id)).json().status, 'CREATED');
  });

  it('issues widget data that payd verifies, and rejects tampered data', async () => {
    const s = await create();
    const svc = t.app.services.clientSessions;
    assert.equal(svc.verifyWidgetData(s.widget.data), s.id);
    const s2 = await create();
    assert.notEqual(s2.widget.data, s.widget.data);
    assert.equal(svc.verifyWidgetData(s2.widget.data), s2.id);

    const decoded = Buffer.from(s.widget.data, 'base64url').toString('utf8');
    const [id, mac] = decoded.split('.');
    const swapped = Buffer.from(`${s2.id}.${mac}`).toString('base64url');
    assert.equal(svc.verifyWidgetData(swapped), undefined);
    const flipped = mac!.slice(0, -1) + (mac!.endsWith('A') ? 'B' : 'A');
    assert.equal(svc.verifyWidgetData(Buffer.from(`${id}.${flipped}`).toString('base64url')), undefined);
    // One character changed in the middle of the encoding (every bit of it counts there).
    const i = Math.floor(s.widget.data.length / 2);
    const changed = s.widget.data.slice(0, i) + (s.widget.data[i] === 'A' ? 'g' : 'A') + s.widget.data.slice(i + 1);
    assert.equal(svc.verifyWidgetData(changed), undefined);
    assert.equal(svc.verifyWidgetData(''), undefined);
    assert.equal(svc.verifyWidgetData('not-base64-at-all!!'), undefined);
    assert.equal(svc.verifyWidgetData(Buffer.from(`${id}`).toString('base64url')), undefined);
  });
});
