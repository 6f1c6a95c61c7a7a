// Bad inputs: each is refused with a 4xx problem+json naming the field, and none of
// them leaves a row behind in payments, partner_transactions, payment_operations or
// client_sessions.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const cardPart = (amount: number, number?: string) => ({ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) });
const TABLES = ['payments', 'partner_transactions', 'payment_operations', 'client_sessions'] as const;

describe('bad inputs change nothing', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  let paymentId: string;

  const counts = async () => {
    const out: Record<string, number> = {};
    for (const table of TABLES) {
      const { rows } = await t.testDb.db.query<{ n: number | string }>(`SELECT count(*) AS n FROM ${table}`);
      out[table] = Number(rows[0]!.n);
    }
    return out;
  };

  /** Sends a request, expects the problem and the field it names, and no new rows. */
  const refused = async (send: () => Promise<LightMyRequestResponse>, status: number, field: string) => {
    const before = await counts();
    const res = await send();
    const p = expectProblem(res, status);
    const named = (p.invalid_params ?? []).some((x) => x.name === field) || String(p.detail ?? '').includes(field);
    assert.ok(named, `expected the problem to name ${field}: ${res.body}`);
    assert.deepEqual(await counts(), before, `rows changed after: ${res.body}`);
    return p;
  };
  const base = () => ({ amount: 1000, currency: 'EUR', split: [cardPart(1000)] });
  const createPayment = (payload: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...m.auth, ...headers }, payload: payload as object });
  const createSession = (payload: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 2500, currency: 'EUR', ...payload } });

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('bad-inputs');
    other = await t.createMerchant('bad-inputs-other');
    const res = await createPayment(base());
    assert.equal(res.statusCode, 200, res.body);
    paymentId = res.json().id;
    // A session too, so that counts start from non-empty tables.
    assert.equal((await createSession({})).statusCode, 200);
  });
  after(() => t.close());

  it('refuses an amount given as a string', async () => {
    const p = await refused(() => createPayment({ ...base(), amount: '1000' }), 400, 'amount');
    assert.equal(p.invalid_params?.find((x) => x.name === 'amount')?.in, 'body');
  });

  it('refuses a negative, zero or fractional amount', async () => {
    for (const amount of [-1, 0, 1.5]) {
      await refused(() => createPayment({ amount, currency: 'EUR', split: [cardPart(1000)] }), 400, 'amount');
    }
  });

  it('refuses a payment without split', async () => {
    await refused(() => createPayment({ amount: 1000, currency: 'EUR' }), 400, 'split');
  });

  it('refuses a split that does not add up to the amount', async () => {
    await refused(() => createPayment({ amount: 1000, currency: 'EUR', split: [cardPart(900)] }), 400, 'split');
  });

  it('refuses an unknown partner', async () => {
    await refused(() => createPayment({ amount: 1000, currency: 'EUR', split: [{ ...cardPart(1000), partner: 'nope-sim' }] }), 400, 'split[0].partner');
  });

  it('refuses a method the partner does not offer', async () => {
    await refused(() => createPayment({ amount: 1000, currency: 'EUR', split: [{ ...cardPart(1000), method: 'INSTALLMENTS_3X' }] }), 400, 'split[0].method');
  });

  it('refuses a currency the partner does not accept (gift-sim in USD)', async () => {
    const split = [{ partner: 'gift-sim', method: 'GIFT_CARD', amount: 1000, instrument: { type: 'GIFT_CARD', number: '603628000000123456' } }];
    await refused(() => createPayment({ amount: 1000, currency: 'USD', split }), 400, 'currency');
  });

  it('refuses a CARD part without instrument', async () => {
    await refused(() => createPayment({ amount: 1000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 1000 }] }), 400, 'split[0].instrument');
  });

  it('refuses a card number that fails the Luhn check', async () => {
    await refused(() => createPayment({ amount: 1000, currency: 'EUR', split: [cardPart(1000, '4242424242424241')] }), 400, 'split[0].instrument.number');
  });

  it('refuses two CARD parts', async () => {
    await refused(() => createPayment({ amount: 1000, currency: 'EUR', split: [cardPart(500), cardPart(500, '5555555555554444')] }), 400, 'split');
  });

  it('refuses an unknown top-level field', async () => {
    await refused(() => createPayment({ ...base(), surprise: true }), 400, 'surprise');
  });

  it('refuses the entity_id of another entity with 403', async () => {
    await refused(() => createPayment({ ...base(), entity_id: other.entityId }), 403, 'entity_id');
  });

  it('refuses a body over 1 MiB with 413', async () => {
    const big = { ...base(), order: { reference: 'big', additional_data: { blob: 'x'.repeat(1024 * 1024 + 10) } } };
    const before = await counts();
    const res = await createPayment(big);
    expectProblem(res, 413);
    assert.deepEqual(await counts(), before);
  });

  it('refuses a text/plain body with 415', async () => {
    const before = await counts();
    const res = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'content-type': 'text/plain' }, payload: JSON.stringify(base()),
    });
    expectProblem(res, 415);
    assert.deepEqual(await counts(), before);
  });

  it('refuses an x-idempotency-key with a space', async () => {
    const p = await refused(() => createPayment(base(), { 'x-idempotency-key': 'two words' }), 400, 'x-idempotency-key');
    assert.equal(p.invalid_params?.find((x) => x.name === 'x-idempotency-key')?.in, 'header');
    await refused(
      () => t.app.inject({ method: 'POST', url: `/v2/payments/${paymentId}/captures`, headers: { ...m.auth, 'x-idempotency-key': 'a b' }, payload: { amount: 10 } }),
      400, 'x-idempotency-key',
    );
  });

  it('refuses a capture of 0 or of a string amount', async () => {
    for (const amount of [0, '10']) {
      await refused(
        () => t.app.inject({ method: 'POST', url: `/v2/payments/${paymentId}/captures`, headers: m.auth, payload: { amount } }),
        400, 'amount',
      );
    }
    const p = (await t.app.inject({ url: `/v2/payments/${paymentId}`, headers: m.auth })).json();
    assert.equal(p.captures.length, 0);
    assert.equal(p.amounts.available_to_capture, 1000);
  });

  it('refuses a client session expiring in the past or more than 24 h ahead, or with a bad shopper_redirection_url', async () => {
    await refused(() => createSession({ expires_at: new Date(Date.now() - 60_000).toISOString() }), 400, 'expires_at');
    await refused(() => createSession({ expires_at: new Date(Date.now() + 24 * 3600_000 + 120_000).toISOString() }), 400, 'expires_at');
    for (const url of ['not a url', 'ftp://shop.example/return', 'javascript:alert(1)']) {
      await refused(() => createSession({ shopper_redirection_url: url }), 400, 'shopper_redirection_url');
    }
  });

  // Issue 45, item 3: RFC 3339 allows 23:59:60 and offsets to ±23:59; Date.parse gives NaN
  // for the first and PostgreSQL refuses both, which used to end in a 500.
  it('refuses timestamps JavaScript or PostgreSQL cannot take (leap second, offset beyond ±14:00, year 0000, 30 February) naming the field', async () => {
    const bad = ['2026-06-30T23:59:60Z', '2026-06-30T12:00:00+23:59', '0000-01-01T00:00:00Z', '2026-02-30T00:00:00Z', '2026-06-30T24:00:00Z',
      '9999-12-31T23:59:59-14:00', '0001-01-01T00:00:00+14:00']; // (the last two: an instant in year 10000 or year 0 in UTC)
    for (const value of bad) {
      for (const [path, field] of [['/v2/payments', 'created_gte'], ['/v2/payments', 'created_lt'], ['/v2/events', 'created_gte'], ['/v2/client-sessions', 'created_lt']] as const) {
        const res = await t.app.inject({ url: `${path}?${field}=${encodeURIComponent(value)}`, headers: m.auth });
        if (res.statusCode === 404 || res.statusCode === 405) continue; // no list at that path
        await refused(async () => res, 400, field);
      }
      await refused(() => createSession({ expires_at: value }), 400, 'expires_at');
      await refused(() => t.app.inject({ method: 'POST', url: '/v2/payment-links', headers: m.auth, payload: {
        amount: 4200, currency: 'EUR', capture_mode: 'MANUAL', shopper_redirection_url: 'https://shop.example/thanks', expires_at: value,
      } }), 400, 'expires_at');
    }
    // The forms that are fine still pass: an offset, fractions, a lower-case t and z.
    for (const value of ['2026-06-30T23:59:59.123456+02:00', '2026-06-30t23:59:59z', '2024-02-29T00:00:00-12:00']) {
      const res = await t.app.inject({ url: `/v2/payments?created_gte=${encodeURIComponent(value)}`, headers: m.auth });
      assert.equal(res.statusCode, 200, `${value}: ${res.body}`);
    }
  });
});
