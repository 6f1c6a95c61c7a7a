// Extra webhook header values (often a merchant's credential) are stored sealed, shown
// masked, and opened only to send: on the entity's endpoint, on a payment link's webhook
// and on the events of the link. Rows written in plain text before migration 0014 are
// sealed when a payd process starts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MASTER_KEY, type TestApp } from '../helpers/app.ts';
import { openHeaders } from '../../src/webhooks/header-seal.ts';
import { buildAppOn, enqueue, type Receiver, setEndpoint, settled, startWebhookApp, stopWebhookApp } from './helpers.ts';

describe('sealed webhook header values', () => {
  let t: TestApp;
  let rx: Receiver;
  before(async () => ({ t, rx } = await startWebhookApp()));
  after(() => stopWebhookApp({ t, rx }));

  /** Rows of the webhook and link tables whose text contains `needle`. */
  const plainCopies = async (needle: string) => (await t.testDb.db.query<{ what: string }>(
    `SELECT 'endpoint' AS what FROM webhook_endpoints WHERE headers::text LIKE $1
     UNION ALL SELECT 'event' FROM webhook_events WHERE headers::text LIKE $1 OR data::text LIKE $1
     UNION ALL SELECT 'link' FROM payment_links WHERE webhook::text LIKE $1`, [`%${needle}%`])).rows.map((r) => r.what);

  it("an endpoint's header values: sealed at rest, masked in responses, sent in clear", async () => {
    const m = await t.createMerchant();
    const token = `Bearer ${randomUUID()}`;
    const put = await setEndpoint(t, m.entityId, rx.url, [{ name: 'Authorization', values: [token] }, { name: 'x-two', values: ['a1', 'b2'] }]);
    assert.deepEqual(put.headers, [{ name: 'Authorization', values: ['[redacted]'] }, { name: 'x-two', values: ['[redacted]', '[redacted]'] }]);
    const got = await t.app.inject({ url: `/admin/v1/entities/${m.entityId}/webhook-endpoint`, headers: t.adminHeaders });
    assert.deepEqual(got.json().headers, put.headers);
    assert.doesNotMatch(got.body, new RegExp(token));
    const { rows } = await t.testDb.db.query<{ headers_enc: string }>('SELECT headers_enc FROM webhook_endpoints WHERE entity_id = $1', [m.entityId]);
    assert.deepEqual(openHeaders(MASTER_KEY, m.entityId, rows[0]!.headers_enc), [{ name: 'Authorization', values: [token] }, { name: 'x-two', values: ['a1', 'b2'] }]);
    assert.throws(() => openHeaders(MASTER_KEY, randomUUID(), rows[0]!.headers_enc), 'bound to its entity');
    assert.deepEqual(await plainCopies(token), []);

    const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
    assert.equal((await settled(t, m.entityId, id)).status, 'DELIVERED');
    const call = rx.requests.find((r) => r.headers['payd-event-id'] === id)!;
    assert.equal(call.headers.authorization, token);
    assert.equal(call.headers['x-two'], 'a1, b2');
    const event = await t.app.inject({ url: `/admin/v1/entities/${m.entityId}/webhook-events/${id}`, headers: t.adminHeaders });
    assert.deepEqual(event.json().deliveries[0].header_names, ['Authorization', 'x-two']);
    assert.doesNotMatch(event.body, new RegExp(token));
  });

  it("a payment link's webhook headers: sealed on the link and its events, sent with each call", async () => {
    const m = await t.createMerchant();
    const secret = `shop-${randomUUID()}`;
    const created = await t.app.inject({
      method: 'POST', url: '/v2/payment-links', headers: m.auth,
      payload: { amount: 1200, currency: 'EUR', webhook: { url: `${rx.url}/link`, headers: [{ name: 'x-shop-token', values: [secret] }] } },
    });
    assert.equal(created.statusCode, 200, created.body);
    assert.deepEqual(created.json().webhook, { url: `${rx.url}/link`, headers: [{ name: 'x-shop-token', values: ['[redacted]'] }] });
    const cancel = await t.app.inject({ method: 'POST', url: `/v2/payment-links/${created.json().id}/cancel`, headers: m.auth });
    assert.equal(cancel.statusCode, 200, cancel.body);
    assert.doesNotMatch(cancel.body, new RegExp(secret));
    const { rows } = await t.testDb.db.query<{ id: string }>(
      "SELECT id FROM webhook_events WHERE entity_id = $1 AND type = 'payment_link.cancelled'", [m.entityId]);
    const eventId = rows[0]!.id;
    assert.equal((await settled(t, m.entityId, eventId)).status, 'DELIVERED');
    const call = rx.requests.find((r) => r.headers['payd-event-id'] === eventId)!;
    assert.equal(call.headers['x-shop-token'], secret);
    assert.doesNotMatch(call.body, new RegExp(secret), 'the event payload shows the link with masked values');
    assert.deepEqual(await plainCopies(secret), []);
  });

  it('seals at start-up the values stored in plain text before migration 0014', async () => {
    const m = await t.createMerchant();
    const [a, b, c] = [`plain-a-${randomUUID()}`, `plain-b-${randomUUID()}`, `plain-c-${randomUUID()}`];
    const db = t.testDb.db;
    await db.query('INSERT INTO webhook_endpoints (entity_id, url, headers) VALUES ($1, $2, $3::jsonb)',
      [m.entityId, rx.url, JSON.stringify([{ name: 'x-a', values: [a] }])]);
    const linkId = randomUUID();
    await db.query(
      `INSERT INTO payment_links (id, entity_id, status, amount, currency, capture_mode, expires_at, webhook)
       VALUES ($1, $2, 'CREATED', 500, 'EUR', 'MANUAL', now() + interval '1 day', $3::jsonb)`,
      [linkId, m.entityId, JSON.stringify({ url: `${rx.url}/old-link`, headers: [{ name: 'x-b', values: [b] }] })]);
    const eventId = randomUUID();
    await db.query(
      `INSERT INTO webhook_events (id, entity_id, type, data, url, headers) VALUES ($1, $2, 'payment_link.paid', '{}', $3, $4::jsonb)`,
      [eventId, m.entityId, `${rx.url}/old-event`, JSON.stringify([{ name: 'x-c', values: [c] }])]);
    for (const v of [a, b, c]) assert.equal((await plainCopies(v)).length, 1, 'plain before the restart');

    const restarted = await buildAppOn(db, t.config); // onReady: the sweep
    try {
      for (const v of [a, b, c]) assert.deepEqual(await plainCopies(v), [], `${v} sealed`);
      const link = await restarted.inject({ url: `/v2/payment-links/${linkId}`, headers: m.auth });
      assert.deepEqual(link.json().webhook.headers, [{ name: 'x-b', values: ['[redacted]'] }]);
      // The old event is delivered with its value, and so is an event to the old endpoint.
      await db.query(`INSERT INTO webhook_deliveries (id, event_id, entity_id, reason) VALUES ($1, $2, $3, 'EVENT')`, [randomUUID(), eventId, m.entityId]);
      const { id } = await enqueue(db, { entityId: m.entityId, type: 'payment.captured', data: {} });
      assert.equal((await settled(t, m.entityId, eventId)).status, 'DELIVERED');
      assert.equal((await settled(t, m.entityId, id)).status, 'DELIVERED');
      assert.equal(rx.requests.find((r) => r.headers['payd-event-id'] === eventId)!.headers['x-c'], c);
      assert.equal(rx.requests.find((r) => r.headers['payd-event-id'] === id)!.headers['x-a'], a);
    } finally {
      await restarted.close();
    }
  });
});
