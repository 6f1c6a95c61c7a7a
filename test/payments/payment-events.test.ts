// Payment changes write webhook events in the transaction of the change: one per
// authorization outcome and per settled operation, with the payment's summary as it then
// is and what changed (the authorization, or the one operation).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { paymentEventData } from '../../src/payments/payment-events.ts';

const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });

describe('payment events in the outbox', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Events shop');
  });
  after(() => t.close());

  const pay = async (number: string, extra: Record<string, unknown> = {}) => (await t.app.inject({
    method: 'POST', url: '/v2/payments', headers: m.auth,
    payload: { amount: 1000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card(number) }], ...extra },
  })).json();
  const events = async (paymentId: string) => (await t.testDb.db.query<{ type: string; data: any; entity_id: string; url: string | null }>(
    `SELECT type, data, entity_id, url FROM webhook_events WHERE data->>'id' = $1 ORDER BY created_at`, [paymentId])).rows;

  it('authorized, then captured and refunded: one event each, data as the API shows it', async () => {
    const p = await pay('4242424242424242');
    const cap = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: m.auth, payload: { amount: 600 } });
    const ref = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/refunds`, headers: m.auth, payload: { amount: 100 } });
    const evs = await events(p.id);
    assert.deepEqual(evs.map((e) => e.type), ['payment.authorized', 'payment.captured', 'payment.refunded']);
    assert.equal(evs[0]!.entity_id, m.entityId);
    assert.equal(evs[0]!.url, null, 'no link: the entity endpoint');
    assert.equal(evs[0]!.data.version, p.version);
    assert.equal(evs[1]!.data.operation_id, cap.headers['x-created-operation-id']);
    assert.equal(evs[1]!.data.amounts.total_captured, 600);
    assert.equal(evs[2]!.data.operation_id, ref.headers['x-created-operation-id']);
    const now = (await t.app.inject({ url: `/v2/payments/${p.id}`, headers: { ...m.auth, 'cache-control': 'max-age=60' } })).json();
    assert.deepEqual(evs[2]!.data, paymentEventData(now, ref.headers['x-created-operation-id'] as string));
    assert.equal(evs[2]!.data.operation!.kind, 'REFUND');
    assert.equal(evs[2]!.data.operation!.amount, 100);
    assert.equal(evs[2]!.data.amounts.total_refunded, 100);
    assert.equal('captures' in evs[2]!.data || 'refunds' in evs[2]!.data, false, 'no list of earlier operations');
    assert.deepEqual(evs[0]!.data.authorization, p.authorization, 'the authorization event carries the authorization');
    assert.deepEqual(evs[1]!.data.authorization, { status: 'AUTHORIZED' }, 'an operation event: the authorization status only');
  });

  it('refused and failed authorizations, and a declined capture', async () => {
    assert.deepEqual((await events((await pay('4000000000000002')).id)).map((e) => e.type), ['payment.refused']);
    assert.deepEqual((await events((await pay('4000000000000119')).id)).map((e) => e.type), ['payment.failed']);
    const p = await pay('4000000000000341');
    await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: m.auth, payload: { amount: 1000 } });
    assert.deepEqual((await events(p.id)).map((e) => e.type), ['payment.authorized', 'payment.capture_failed']);
  });

  it('a 3-D Secure payment has no event until the challenge ends; a refused request writes none', async () => {
    const p = await pay('4000000000003220');
    assert.equal(p.authorization.status, 'PENDING');
    assert.deepEqual(await events(p.id), []);
    const acs = t.app.services.partners.get('card-sim') as unknown as { completeChallenge(ref: string, ok: boolean): Promise<unknown> };
    await acs.completeChallenge(p.authorization.partner_transactions[0].partner_reference, true);
    await t.app.inject({ url: `/v2/payments/${p.id}`, headers: m.auth });
    assert.deepEqual((await events(p.id)).map((e) => e.type), ['payment.authorized']);
    const before = (await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_events')).rows[0]!.n;
    const bad = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: m.auth, payload: { amount: 999_999 } });
    assert.equal(bad.statusCode, 400);
    assert.equal((await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_events')).rows[0]!.n, before);
  });
});
