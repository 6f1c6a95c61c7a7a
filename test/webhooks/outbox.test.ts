// The transactional outbox: an event commits or rolls back with the change it describes;
// events without a destination wait for a replay; replays re-send the same event.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { expectProblem, type TestApp } from '../helpers/app.ts';
import { Problem } from '../../src/platform/http/problem.ts';
import { enqueueEvent, validateWebhookTarget } from '../../src/webhooks/index.ts';
import { enqueue, getEvent, type Polls, type Receiver, setEndpoint, settled, startWebhookApp, stopWebhookApp, tableCounts, waitFor } from './helpers.ts';

describe('webhook outbox', () => {
  let t: TestApp;
  let rx: Receiver;
  let polls: Polls;
  before(async () => ({ t, rx, polls } = await startWebhookApp()));
  after(() => stopWebhookApp({ t, rx }));

  it('never delivers an event whose transaction rolled back, and delivers the committed one', async () => {
    const m = await t.createMerchant();
    await setEndpoint(t, m.entityId, rx.url);
    const rolledBackId = randomUUID();
    await assert.rejects(
      t.testDb.db.transaction(async (tx) => {
        await enqueueEvent(tx, { id: rolledBackId, entityId: m.entityId, type: 'payment.captured', data: { n: 1 } });
        throw new Error('the capture failed after the event was written');
      }),
      /capture failed/,
    );
    const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: { n: 2 } });
    await settled(t, m.entityId, id);
    await polls.more(); // the dispatcher polled again since: nothing else was due
    assert.equal(rx.requests.filter((r) => r.headers['payd-event-id'] === rolledBackId).length, 0);
    assert.equal(rx.requests.filter((r) => r.headers['payd-event-id'] === id).length, 1);
    const rows = await t.testDb.db.query('SELECT 1 FROM webhook_events WHERE id = $1', [rolledBackId]);
    assert.equal(rows.rowCount, 0);
    expectProblem(await t.app.inject({ url: `/admin/v1/entities/${m.entityId}/webhook-events/${rolledBackId}`, headers: t.adminHeaders }), 404);
  });

  it("refuses an invalid link webhook with a 400 Problem naming the field, rolling back the caller's change", async () => {
    const before = await tableCounts(t.testDb.db);
    const entityId = randomUUID();
    const attempt = (target: { url: string; headers?: any }) => t.testDb.db.transaction(async (tx) => {
      await tx.query("INSERT INTO entities (id, name) VALUES ($1, 'rolled back')", [entityId]);
      await enqueueEvent(tx, { entityId, type: 'payment_link.paid', data: {}, ...target });
    });
    const cases: Array<[{ url: string; headers?: any }, string]> = [
      [{ url: 'ftp://example.com/x' }, 'webhook.url'],
      [{ url: 'not a url' }, 'webhook.url'],
      [{ url: 'https://user:pw@example.com/x' }, 'webhook.url'],
      [{ url: 'https://example.com:6667/x' }, 'webhook.url'],
      [{ url: 'https://example.com/x', headers: [{ name: 'bad name', values: ['v'] }] }, 'webhook.headers[0].name'],
      [{ url: 'https://example.com/x', headers: [{ name: 'payd-signature', values: ['v'] }] }, 'webhook.headers[0].name'],
      [{ url: 'https://example.com/x', headers: [{ name: 'x-a', values: ['ok', 'line\r\nInjected: 1'] }] }, 'webhook.headers[0].values[1]'],
      [{ url: 'https://example.com/x', headers: [{ name: 'x-a', values: [] }] }, 'webhook.headers[0].values'],
      [{ url: 'https://example.com/x', headers: 'x-a: 1' }, 'webhook.headers'],
    ];
    for (const [target, field] of cases) {
      const err = await attempt(target).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof Problem, `${JSON.stringify(target)}: ${String(err)}`);
      assert.equal(err.status, 400);
      assert.ok((err.extra.invalid_params as any[]).some((p) => p.name === field), JSON.stringify(err.extra));
    }
    assert.equal((await t.testDb.db.query('SELECT 1 FROM entities WHERE id = $1', [entityId])).rowCount, 0);
    assert.deepEqual(await tableCounts(t.testDb.db), before);
    // The same check is available to the link module for its create request.
    assert.deepEqual(validateWebhookTarget({ url: 'https://example.com/x', headers: [{ name: 'x-a', values: ['1'] }] }, 'webhook.'), []);
    // A malformed type or an unknown entity is a programming error, and rolls back too.
    await assert.rejects(enqueue(t.testDb.db, { entityId: randomUUID(), type: 'Payment Captured' as never, data: {} }), TypeError); // (a type outside the catalogue does not compile)
    await assert.rejects(enqueue(t.testDb.db, { entityId: randomUUID(), type: 'payment.captured', data: {} }));
    assert.deepEqual(await tableCounts(t.testDb.db), before);
  });

  it('keeps an event without destination (NO_DESTINATION); a replay after setting an endpoint delivers it', async () => {
    const m = await t.createMerchant();
    const { id, deliveryId } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.authorized', data: { a: 1 } });
    assert.equal(deliveryId, null);
    const e = await getEvent(t, m.entityId, id);
    assert.equal(e.status, 'NO_DESTINATION');
    assert.equal(e.target, 'ENTITY_ENDPOINT');
    assert.deepEqual(e.deliveries, []);
    const replayUrl = `/admin/v1/entities/${m.entityId}/webhook-events/${id}/replay`;
    expectProblem(await t.app.inject({ method: 'POST', url: replayUrl, headers: t.adminHeaders }), 409);
    assert.deepEqual((await getEvent(t, m.entityId, id)).deliveries, []);

    await setEndpoint(t, m.entityId, `${rx.url}/late`);
    const res = await t.app.inject({ method: 'POST', url: replayUrl, headers: t.adminHeaders });
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json().reason, 'REPLAY');
    assert.equal(res.json().url, `${rx.url}/late`);
    const done = await settled(t, m.entityId, id);
    assert.equal(done.status, 'DELIVERED');
    const got = rx.requests.filter((r) => r.headers['payd-event-id'] === id);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.path, '/late');
    assert.equal(JSON.parse(got[0]!.body).id, id);
  });

  it('replays a delivered event through the operator API: same id and body, a new delivery', async () => {
    const m = await t.createMerchant();
    await setEndpoint(t, m.entityId, rx.url);
    const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.refunded', data: { amount: 5 } });
    await settled(t, m.entityId, id);
    const res = await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${m.entityId}/webhook-events/${id}/replay`, headers: t.adminHeaders });
    assert.equal(res.statusCode, 202, res.body);
    const replay = res.json();
    assert.equal(replay.status, 'PENDING');
    assert.equal(replay.attempt_count, 0);
    const event = await waitFor(async () => {
      const e = await getEvent(t, m.entityId, id);
      return e.deliveries.length === 2 && e.deliveries[1].status === 'DELIVERED' ? e : undefined;
    });
    assert.deepEqual(event.deliveries.map((d: any) => d.reason), ['EVENT', 'REPLAY']);
    assert.equal(event.deliveries[1].id, replay.id);
    const got = rx.requests.filter((r) => r.headers['payd-event-id'] === id);
    assert.equal(got.length, 2);
    assert.equal(got[0]!.body, got[1]!.body);
    assert.notEqual(got[0]!.headers['payd-delivery-id'], got[1]!.headers['payd-delivery-id']);
  });

  it('sends retries of an endpoint event to the endpoint as it is now', async () => {
    const m = await t.createMerchant();
    await setEndpoint(t, m.entityId, `${rx.url}/broken`);
    rx.respond = (req) => (req.path === '/broken' ? { status: 404 } : { status: 200 });
    const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
    await waitFor(() => rx.requests.some((r) => r.path === '/broken' && r.headers['payd-event-id'] === id));
    await setEndpoint(t, m.entityId, `${rx.url}/fixed`);
    const event = await settled(t, m.entityId, id);
    rx.respond = () => ({ status: 200 });
    assert.equal(event.status, 'DELIVERED');
    const attempts = event.deliveries[0].attempts;
    assert.equal(attempts[0].url, `${rx.url}/broken`);
    assert.equal(attempts[attempts.length - 1].url, `${rx.url}/fixed`);
  });

  it('lists events newest first with cursor pagination and filters', async () => {
    const m = await t.createMerchant();
    const ids: string[] = [];
    for (const type of ['payment.authorized', 'payment.captured', 'payment.captured'] as const) {
      ids.push((await enqueue(t.testDb.db, { entityId: m.entityId, type, data: {} })).id);
    }
    const list = (q: string) => t.app.inject({ url: `/admin/v1/entities/${m.entityId}/webhook-events${q}`, headers: t.adminHeaders });
    const page1 = (await list('?limit=2')).json();
    assert.deepEqual(page1.data.map((e: any) => e.id), [ids[2], ids[1]]);
    assert.equal(page1.next_cursor, ids[1]);
    const page2 = (await list(`?limit=2&starting_after=${page1.next_cursor}`)).json();
    assert.deepEqual(page2.data.map((e: any) => e.id), [ids[0]]);
    assert.equal(page2.next_cursor, null);
    assert.deepEqual((await list('?type=payment.authorized')).json().data.map((e: any) => e.id), [ids[0]]);
    assert.deepEqual((await list('?status=NO_DESTINATION')).json().data.length, 3);
    assert.deepEqual((await list('?status=DELIVERED')).json().data, []);
    assert.ok(!('data' in page1.data[0]), 'the list leaves the snapshot out');
  });
});
