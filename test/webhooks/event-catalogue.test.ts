// Event types are closed (issue 44): the catalogue (src/webhooks/catalogue.ts) is the set
// of types payd can emit, no more and no less. Statically: every type the producers can
// return, for every status, is in the catalogue, and the catalogue holds nothing that no
// producer returns. At run time: the events written by the money flows through the real
// app (authorized, refused, captured, a declined capture, refunded, voided, a link paid
// and cancelled) all carry a catalogued type.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EVENT_TYPES } from '../../src/webhooks/catalogue.ts';
import { authorizationEventType, operationEventType } from '../../src/payments/payment-events.ts';
import { AUTHORIZATION_STATUSES, OPERATION_STATUSES } from '../../src/payments/common.schemas.ts';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';

const catalogued = new Set<string>(EVENT_TYPES.map((e) => e.type));
const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const payment = (amount: number, number = '4242424242424242') => ({
  amount, currency: 'EUR', capture_mode: 'MANUAL', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) }],
});
/** The link events, produced by links.service.ts under these names (its `event` takes only `payment_link.*` catalogue types). */
const LINK_TYPES = ['payment_link.paid', 'payment_link.payment_failed', 'payment_link.cancelled'];

describe('the event catalogue', () => {
  it('is exactly the set of types the producers return', () => {
    // webhook_endpoint.test: written by POST /v2/webhook-endpoints/{id}/test (webhooks.service.ts sendTestEvent).
    const produced = new Set<string>([...LINK_TYPES, 'webhook_endpoint.test']);
    for (const status of AUTHORIZATION_STATUSES) {
      const type = authorizationEventType(status);
      if (type) produced.add(type);
    }
    for (const kind of ['CAPTURE', 'REFUND', 'VOID'] as const) {
      for (const status of OPERATION_STATUSES) {
        const type = operationEventType({ kind, status });
        if (type) produced.add(type);
      }
    }
    assert.deepEqual([...produced].filter((t) => !catalogued.has(t)), [], 'produced, not catalogued');
    assert.deepEqual([...catalogued].filter((t) => !produced.has(t)), [], 'catalogued, never produced');
    assert.equal(EVENT_TYPES.length, catalogued.size, 'no type listed twice');
  });

  describe('at run time', () => {
    let t: TestApp;
    let m: Merchant;
    before(async () => {
      t = await createTestApp();
      m = await t.createMerchant('Catalogue');
      const put = await t.app.inject({ method: 'PUT', url: '/v2/webhook-endpoint', headers: m.auth, payload: { url: 'https://shop.example/hooks' } });
      assert.ok(put.statusCode < 300, put.body);
    });
    after(() => t.close());
    const post = (url: string, payload?: object) => t.app.inject({ method: 'POST', url, headers: m.auth, ...(payload ? { payload } : {}) });

    it('every event the money flows write has a catalogued type', async () => {
      const a = (await post('/v2/payments', payment(5000))).json();
      assert.equal(a.authorization.status, 'AUTHORIZED');
      assert.equal((await post(`/v2/payments/${a.id}/captures`, { amount: 3000 })).statusCode, 200);
      assert.equal((await post(`/v2/payments/${a.id}/refunds`, { amount: 1000 })).statusCode, 200);
      assert.equal((await post(`/v2/payments/${a.id}/voids`, {})).statusCode, 200);
      const refused = (await post('/v2/payments', payment(1000, '4000000000000002'))).json();
      assert.equal(refused.authorization.status, 'REFUSED', JSON.stringify(refused.authorization));
      const declinedCapture = (await post('/v2/payments', payment(1000, '4000000000000341'))).json();
      assert.equal((await post(`/v2/payments/${declinedCapture.id}/captures`, { amount: 1000 })).statusCode, 200);
      const link = (await post('/v2/payment-links', { amount: 4200, currency: 'EUR', webhook: { url: 'https://shop.example/hooks/link' } })).json();
      assert.equal((await post(`/v2/payment-links/${link.id}/cancel`)).statusCode, 200);

      const { rows } = await t.testDb.db.query<{ type: string }>('SELECT DISTINCT type FROM webhook_events WHERE entity_id = $1', [m.entityId]);
      const seen = rows.map((r) => r.type).sort();
      assert.deepEqual(seen.filter((type) => !catalogued.has(type)), [], `uncatalogued: ${seen.join(', ')}`);
      for (const type of ['payment.authorized', 'payment.refused', 'payment.captured', 'payment.capture_failed', 'payment.refunded', 'payment.voided', 'payment_link.cancelled']) {
        assert.ok(seen.includes(type), `${type} written (seen: ${seen.join(', ')})`);
      }
    });
  });
});
