// One JSON text per payment change: the answer to the request is, byte for byte, the
// payload of the webhook event the change recorded (plus operation_id for operations),
// written by the Payment schema's serializer, so nothing outside the schema leaves.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { paymentJson, withOperationId } from '../../src/payments/payment-json.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
const body = (amount: number) => ({ amount, currency: 'EUR', order: { reference: 'json-1' }, split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });

describe('payment JSON written once', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Payment JSON');
  });
  after(() => t.close());

  // The event payload as stored (json keeps the text as written).
  const eventData = async (paymentId: string, type: string) => (await t.testDb.db.query<{ data: string }>(
    `SELECT data::text AS data FROM webhook_events WHERE entity_id = $1 AND type = $2 AND data->>'id' = $3`, [m.entityId, type, paymentId])).rows.map((r) => r.data);

  it('the creation answers the very text of its payment.authorized event', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: body(2500) });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json; charset=utf-8/);
    assert.deepEqual(await eventData(res.json().id, 'payment.authorized'), [res.body]);
  });

  it('a capture answers the text of its payment.captured event, less the operation id the event adds', async () => {
    const p = (await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: body(3000) })).json();
    const res = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: m.auth, payload: { amount: 1000 } });
    assert.equal(res.statusCode, 200, res.body);
    const opId = String(res.headers['x-created-operation-id']);
    assert.deepEqual(await eventData(p.id, 'payment.captured'), [withOperationId(res.body, opId)]);
    const event = JSON.parse(withOperationId(res.body, opId));
    assert.equal(event.operation_id, opId);
    assert.equal(event.amounts.total_captured, 1000);
  });

  it('writes only what the Payment schema names, and keeps the text with the view', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: body(1200) });
    const view = res.json();
    view.authorization.partner_transactions[0].card.number = '4242424242424242';
    view.internal_note = 'not for merchants';
    const text = paymentJson(view);
    assert.doesNotMatch(text, /4242424242424242|internal_note/);
    assert.deepEqual(JSON.parse(text), res.json());
    assert.equal(paymentJson(view), text, 'the same text for the same view');
  });
});
