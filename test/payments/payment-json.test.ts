// One JSON text per payment change for the answer, written by the Payment schema's
// serializer; the change's webhook event carries its own document, written by the
// PaymentEventData serializer from the same view: the payment's summary plus what changed
// (the authorization, or the one operation), never the lists of earlier operations
// (payd issue 12, item 7). Neither writes anything its schema does not name.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { paymentEventJson, paymentJson } from '../../src/payments/payment-json.ts';
import { paymentEventData } from '../../src/payments/payment-events.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
const body = (amount: number) => ({ amount, currency: 'EUR', order: { reference: 'json-1' }, split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });

/** The summary fields an event shares with the Payment it was written from. */
const SUMMARY = ['id', 'created_at', 'version', 'entity_id', 'amount', 'currency', 'allow_future_usage', 'order_reference', 'capture_mode', 'amounts', 'overview', 'split'];
const pick = (o: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.filter((k) => k in o).map((k) => [k, o[k]]));

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

  it('the creation event is the answer\'s summary with its authorization, as the event serializer writes it', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: body(2500) });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json; charset=utf-8/);
    const answer = res.json();
    // Byte for byte: the event is the answer's view, less its operations, in the event shape.
    assert.deepEqual(await eventData(answer.id, 'payment.authorized'), [paymentEventJson(paymentEventData(answer))]);
    const event = JSON.parse((await eventData(answer.id, 'payment.authorized'))[0]!);
    assert.deepEqual(event, { ...pick(answer, SUMMARY), authorization: answer.authorization, links: { self: answer.links.self } });
    assert.equal(event.authorization.partner_transactions.length, 1);
    for (const k of ['captures', 'refunds', 'voids', 'order', 'operation']) assert.equal(k in event, false, k);
  });

  it('a capture event carries the payment summary and that capture, not the earlier ones', async () => {
    const p = (await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: body(3000) })).json();
    await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: m.auth, payload: { amount: 500 } });
    const res = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: m.auth, payload: { amount: 1000, merchant_reference: 'ship-2' } });
    assert.equal(res.statusCode, 200, res.body);
    const answer = res.json();
    assert.equal(answer.captures.length, 2, 'the answer is the Payment, with every capture');
    const opId = String(res.headers['x-created-operation-id']);
    const texts = await eventData(p.id, 'payment.captured');
    assert.equal(texts.length, 2);
    const last = texts.find((x) => JSON.parse(x).operation_id === opId)!;
    assert.equal(last, paymentEventJson(paymentEventData(answer, opId)), 'written from the answer\'s view');
    const event = JSON.parse(last);
    assert.deepEqual(event, {
      ...pick(answer, SUMMARY),
      authorization: { status: 'AUTHORIZED' },
      operation_id: opId,
      operation: { kind: 'CAPTURE', ...answer.captures.find((c: { id: string }) => c.id === opId) },
      links: { self: answer.links.self },
    });
    assert.equal(event.operation.merchant_reference, 'ship-2');
    assert.equal(event.operation.partner_transactions.length, 1);
    assert.equal(JSON.parse(last).amounts.total_captured, 1500);
    for (const k of ['captures', 'refunds', 'voids']) assert.equal(k in event, false, k);
  });

  it('writes only what the schemas name, and keeps the answer text with the view', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: body(1200) });
    const view = res.json();
    view.authorization.partner_transactions[0].card.number = '4242424242424242';
    view.internal_note = 'not for merchants';
    const text = paymentJson(view);
    assert.doesNotMatch(text, /4242424242424242|internal_note/);
    assert.deepEqual(JSON.parse(text), res.json());
    assert.equal(paymentJson(view), text, 'the same text for the same view');
    const data = paymentEventData(view) as unknown as Record<string, unknown>;
    data.internal_note = 'not for merchants';
    assert.doesNotMatch(paymentEventJson(data as never), /4242424242424242|internal_note/);
  });
});
