// POST /v2/events/{id}/resend (issue 43, `payd events resend`): a merchant sends one of its
// events again, as the operator's replay does: new deliveries of the same event, to every
// enabled endpoint that takes its type, or to the one endpoint named. Another entity's event
// or endpoint is a 404; x-idempotency-key is honoured as on the other creating POSTs; bad
// input is a 400 naming the field; an event with nowhere to go is a 409.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { FAST, type Receiver, startReceiver, waitFor } from './helpers.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2040', cvv: '123' };

describe('webhooks: POST /v2/events/{id}/resend', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  let rx: Receiver;
  let eventId = '';
  let all = '';
  let capturedOnly = '';
  let seq = 0;

  const call = (merchant: Merchant, method: 'GET' | 'POST', url: string, payload?: object, headers: Record<string, string> = {}) =>
    t.app.inject({ method, url, headers: { ...merchant.auth, ...headers }, ...(payload ? { payload } : {}) });
  const resend = (merchant: Merchant, id: string, payload: object = {}, key = `resend-${++seq}`) =>
    call(merchant, 'POST', `/v2/events/${id}/resend`, payload, { 'x-idempotency-key': key });
  const deliveries = async (id: string) => (await t.testDb.db.query<{ id: string; endpoint_id: string | null; reason: string }>(
    'SELECT id, endpoint_id, reason FROM webhook_deliveries WHERE event_id = $1 ORDER BY created_at, id', [id])).rows;
  const endpoint = async (merchant: Merchant, path: string, events: string[]) => {
    const res = await call(merchant, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}${path}`, enabled_events: events }, { 'x-idempotency-key': `ep-${++seq}` });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().id as string;
  };

  before(async () => {
    t = await createTestApp(FAST);
    m = await t.createMerchant('Resend shop');
    other = await t.createMerchant('Other shop');
    rx = await startReceiver();
    t.app.webhooks.dispatcher.start((err) => console.error(err));
    all = await endpoint(m, '/all', ['*']);
    capturedOnly = await endpoint(m, '/captured', ['payment.captured']);
    const paid = await call(m, 'POST', '/v2/payments', { amount: 1200, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 1200, instrument: card }] }, { 'x-idempotency-key': 'pay-1' });
    assert.equal(paid.statusCode, 200, paid.body);
    const events = (await call(m, 'GET', '/v2/events?type=payment.authorized')).json().data as Array<{ id: string }>;
    eventId = events[0]!.id;
    // Its first delivery, to /all only (the other endpoint takes captures only).
    await waitFor(() => rx.requests.some((r) => r.path === '/all' && r.headers['payd-event-id'] === eventId), 15_000, 'the first delivery');
  });
  after(async () => {
    await t?.close();
    await rx?.close();
  });

  it('sends the event again to every enabled endpoint that takes its type: 202 with the new deliveries, which arrive', async () => {
    const before = await deliveries(eventId);
    const res = await resend(m, eventId);
    assert.equal(res.statusCode, 202, res.body);
    const body = res.json();
    assert.equal(body.event_id, eventId);
    assert.equal(body.deliveries.length, 1);
    assert.equal(body.deliveries[0].endpoint_id, all);
    assert.equal(body.deliveries[0].url, `${rx.url}/all`);
    assert.equal(body.deliveries[0].status, 'PENDING');
    const after = await deliveries(eventId);
    assert.equal(after.length, before.length + 1);
    assert.deepEqual(after.at(-1), { id: body.deliveries[0].id, endpoint_id: all, reason: 'REPLAY' });
    const got = await waitFor(() => rx.requests.find((r) => r.headers['payd-delivery-id'] === body.deliveries[0].id), 15_000, 'the resent delivery');
    assert.equal(got!.headers['payd-event-id'], eventId, 'the same event');
    assert.equal(JSON.parse(got!.body).id, eventId);
  });

  it('sends it to the endpoint named only, whatever its enabled_events', async () => {
    const res = await resend(m, eventId, { webhook_endpoint_id: capturedOnly });
    assert.equal(res.statusCode, 202, res.body);
    const [d] = res.json().deliveries;
    assert.equal(res.json().deliveries.length, 1);
    assert.equal(d.endpoint_id, capturedOnly);
    const got = await waitFor(() => rx.requests.find((r) => r.headers['payd-delivery-id'] === d.id), 15_000, 'the delivery to the named endpoint');
    assert.equal(got!.path, '/captured');
    assert.equal(got!.headers['payd-event-id'], eventId);
  });

  it("answers 404 for another entity's event or endpoint, and sends nothing", async () => {
    const before = (await deliveries(eventId)).length;
    const res = await resend(other, eventId);
    assert.equal(res.statusCode, 404, res.body);
    const theirs = await endpoint(other, '/theirs', ['*']);
    expectProblem(await resend(m, eventId, { webhook_endpoint_id: theirs }), 404);
    expectProblem(await resend(m, '00000000-0000-4000-8000-000000000000'), 404);
    assert.equal((await deliveries(eventId)).length, before);
  });

  it('honours x-idempotency-key: a retry sends nothing more and names the first delivery', async () => {
    const first = await resend(m, eventId, {}, 'resend-once');
    assert.equal(first.statusCode, 202, first.body);
    const count = (await deliveries(eventId)).length;
    const again = expectProblem(await resend(m, eventId, {}, 'resend-once'), 409);
    assert.equal(again.resource_id, first.json().deliveries[0].id);
    assert.equal(again.same_request, true);
    const otherBody = expectProblem(await resend(m, eventId, { webhook_endpoint_id: capturedOnly }, 'resend-once'), 409);
    assert.equal(otherBody.same_request, false);
    assert.equal((await deliveries(eventId)).length, count, 'nothing more was sent');
  });

  it('refuses bad input with a 400 naming the field, and an event with nowhere to go with a 409', async () => {
    const bad = expectProblem(await resend(m, eventId, { webhook_endpoint_id: 'nope' }), 400);
    assert.match(JSON.stringify(bad), /webhook_endpoint_id/);
    const extra = expectProblem(await resend(m, eventId, { endpoint: all }), 400);
    assert.match(JSON.stringify(extra), /endpoint/);
    // An entity without endpoints: its event is kept (GET /v2/events) but has no destination.
    const lone = await t.createMerchant('No endpoint shop');
    const paid = await call(lone, 'POST', '/v2/payments', { amount: 500, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 500, instrument: card }] }, { 'x-idempotency-key': 'pay-lone' });
    assert.equal(paid.statusCode, 200, paid.body);
    const loneEvent = (await call(lone, 'GET', '/v2/events')).json().data[0].id as string;
    expectProblem(await resend(lone, loneEvent, {}, 'resend-lone'), 409);
    // Refused: the key is given back, so the same key works once an endpoint exists.
    await endpoint(lone, '/lone', ['*']);
    assert.equal((await resend(lone, loneEvent, {}, 'resend-lone')).statusCode, 202);
  });
});
