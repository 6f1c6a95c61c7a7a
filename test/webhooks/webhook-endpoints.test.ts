// Several webhook endpoints per merchant (issue 43 item 1): /v2/webhook-endpoints creates,
// lists, reads, updates and deletes them with the payment API's credentials, each with its
// own secret shown once; a creation honours x-idempotency-key; bad input is a 400 naming
// the field; another merchant's endpoint is a 404; an event fans out to every enabled
// endpoint whose enabled_events take it, each delivery signed with that endpoint's own
// secret; a test event goes to one endpoint only; the deprecated singular routes manage
// the default endpoint.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { FAST, type Received, type Receiver, startReceiver, waitFor } from './helpers.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2040', cvv: '123' };
const payment = (amount: number) => ({ amount, currency: 'EUR', capture_mode: 'MANUAL', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });

/** The payd-signature of a call has a v1 made with `secret`. */
function signedWith(secret: string, r: Received): boolean {
  const sig = String(r.headers['payd-signature']);
  const ts = /t=(\d+)/.exec(sig)![1]!;
  return [...sig.matchAll(/v1=([0-9a-f]+)/g)].some((x) => x[1] === createHmac('sha256', secret).update(`${ts}.${r.body}`).digest('hex'));
}

describe('webhooks: several endpoints per merchant (/v2/webhook-endpoints)', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  let rx: Receiver;

  before(async () => {
    t = await createTestApp(FAST);
    m = await t.createMerchant('Fan-out shop');
    other = await t.createMerchant('Other shop');
    rx = await startReceiver();
    t.app.webhooks.dispatcher.start((err) => console.error(err));
  });
  after(async () => {
    await t?.close();
    await rx?.close();
  });

  const call = (merchant: Merchant, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, headers: Record<string, string> = {}) =>
    t.app.inject({ method, url, headers: { ...merchant.auth, ...headers }, ...(payload ? { payload } : {}) });
  const at = (path: string) => (r: Received) => r.path === path;

  it('creates, lists, reads, updates and deletes; secrets shown once; idempotent creation; bad input named; another merchant gets 404', async () => {
    const created = await call(m, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}/crud`, enabled_events: ['payment.captured'], description: 'Fulfilment' }, { 'x-idempotency-key': 'ep-1' });
    assert.equal(created.statusCode, 200, created.body);
    const ep = created.json();
    assert.equal(ep.object, 'webhook_endpoint');
    assert.match(ep.secret, /^whsec_/);
    assert.deepEqual(ep.enabled_events, ['payment.captured']);
    assert.equal(ep.status, 'enabled');
    assert.equal(ep.is_default, false);
    assert.equal(created.headers['cache-control'], 'no-store');

    // The same key again creates nothing: 409 naming the endpoint it created, no secret.
    const replay = expectProblem(await call(m, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}/crud`, enabled_events: ['payment.captured'], description: 'Fulfilment' }, { 'x-idempotency-key': 'ep-1' }), 409);
    assert.equal(replay.resource_id, ep.id);
    assert.equal(replay.same_request, true);
    assert.equal(replay.secret, undefined);

    const read = await call(m, 'GET', `/v2/webhook-endpoints/${ep.id}`);
    assert.equal(read.statusCode, 200, read.body);
    assert.equal(read.json().secret, undefined, 'shown once');
    assert.equal(read.json().description, 'Fulfilment');

    const list = (await call(m, 'GET', '/v2/webhook-endpoints')).json();
    assert.equal(list.object, 'list');
    assert.deepEqual(list.data.map((e: { id: string }) => e.id), [ep.id]);
    assert.equal(list.has_more, false);

    const patched = await call(m, 'PATCH', `/v2/webhook-endpoints/${ep.id}`, { enabled_events: ['payment.refunded', 'payment.refunded'], description: null, status: 'disabled' });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.deepEqual(patched.json().enabled_events, ['payment.refunded']);
    assert.equal(patched.json().description, null);
    assert.equal(patched.json().status, 'disabled');

    // Bad input: 400 naming the field.
    for (const [body, name] of [
      [{ url: 'ftp://example.com/x' }, 'url'],
      [{ url: `${rx.url}/x`, enabled_events: ['payment.captured', 'payment.exploded'] }, 'enabled_events[1]'],
      [{ url: `${rx.url}/x`, enabled_events: [] }, 'enabled_events'],
      [{ url: `${rx.url}/x`, status: 'paused' }, 'status'],
      [{ url: `${rx.url}/x`, colour: 'red' }, 'colour'],
      [{ url: `${rx.url}/x`, headers: [{ name: 'payd-signature', values: ['x'] }] }, 'headers[0].name'],
    ] as const) {
      const p = expectProblem(await call(m, 'POST', '/v2/webhook-endpoints', body), 400);
      assert.ok(p.invalid_params?.some((x) => x.name === name || x.name.startsWith(`${name}`)), `${JSON.stringify(body)}: ${JSON.stringify(p.invalid_params)}`);
    }
    const badPatch = expectProblem(await call(m, 'PATCH', `/v2/webhook-endpoints/${ep.id}`, { enabled_events: ['nope.nope'] }), 400);
    assert.ok(badPatch.invalid_params?.some((x) => x.name === 'enabled_events[0]'), JSON.stringify(badPatch));
    expectProblem(await call(m, 'PATCH', `/v2/webhook-endpoints/${ep.id}`, {}), 400);
    expectProblem(await call(m, 'GET', '/v2/webhook-endpoints/not-a-uuid'), 400);

    // Tenant isolation: every route answers 404 to another merchant, and its list is empty.
    expectProblem(await call(other, 'GET', `/v2/webhook-endpoints/${ep.id}`), 404);
    expectProblem(await call(other, 'PATCH', `/v2/webhook-endpoints/${ep.id}`, { status: 'enabled' }), 404);
    expectProblem(await call(other, 'POST', `/v2/webhook-endpoints/${ep.id}/secret/rotate`, {}), 404);
    expectProblem(await call(other, 'POST', `/v2/webhook-endpoints/${ep.id}/test`), 404);
    expectProblem(await call(other, 'DELETE', `/v2/webhook-endpoints/${ep.id}`), 404);
    assert.deepEqual((await call(other, 'GET', '/v2/webhook-endpoints')).json().data, []);
    assert.equal((await t.app.inject({ url: '/v2/webhook-endpoints', headers: t.adminHeaders })).statusCode, 401);

    assert.equal((await call(m, 'DELETE', `/v2/webhook-endpoints/${ep.id}`)).statusCode, 204);
    expectProblem(await call(m, 'GET', `/v2/webhook-endpoints/${ep.id}`), 404);
    expectProblem(await call(m, 'DELETE', `/v2/webhook-endpoints/${ep.id}`), 404);
  });

  it('caps the endpoints of an entity at 16 and pages through them', async () => {
    const capped = await t.createMerchant('Capped shop');
    const ids: string[] = [];
    for (let i = 0; i < 16; i++) {
      const r = await call(capped, 'POST', '/v2/webhook-endpoints', { url: `https://shop.example/hooks/${i}` });
      assert.equal(r.statusCode, 200, r.body);
      ids.push(r.json().id);
    }
    expectProblem(await call(capped, 'POST', '/v2/webhook-endpoints', { url: 'https://shop.example/hooks/16' }), 409);
    // The singular route cannot add a 17th (default) endpoint either.
    expectProblem(await t.app.inject({ method: 'PUT', url: '/v2/webhook-endpoint', headers: capped.auth, payload: { url: 'https://shop.example/default' } }), 409);
    const seen: string[] = [];
    let after = '';
    for (;;) {
      const page = (await call(capped, 'GET', `/v2/webhook-endpoints?limit=5${after}`)).json();
      seen.push(...page.data.map((e: { id: string }) => e.id));
      if (!page.has_more) break;
      after = `&starting_after=${page.next_cursor}`;
    }
    assert.deepEqual([...seen].sort(), [...ids].sort());
    assert.equal(new Set(seen).size, 16);
    const p = expectProblem(await call(m, 'GET', `/v2/webhook-endpoints?starting_after=${ids[0]}`), 400);
    assert.ok(p.invalid_params?.some((x) => x.name === 'starting_after'));
  });

  it('fans an event out to each enabled endpoint whose enabled_events take it, signed with its own secret; a test event goes to one only', async () => {
    const fan = await t.createMerchant('Two endpoints shop');
    const a = (await call(fan, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}/a`, enabled_events: ['payment.authorized'] })).json();
    const b = (await call(fan, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}/b`, enabled_events: ['payment.captured', 'payment.voided'], headers: [{ name: 'x-b', values: ['bee'] }] })).json();
    const all = (await call(fan, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}/all`, enabled_events: ['*'] })).json();
    const off = (await call(fan, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}/off`, status: 'disabled' })).json();
    assert.notEqual(a.secret, b.secret);

    const pay = await call(fan, 'POST', '/v2/payments', payment(1200), { 'x-idempotency-key': 'fan-1' });
    assert.equal(pay.statusCode, 200, pay.body);
    assert.equal((await call(fan, 'POST', `/v2/payments/${pay.json().id}/captures`, { amount: 1200 })).statusCode, 200);

    await waitFor(() => rx.requests.filter(at('/all')).length >= 2 && rx.requests.some(at('/a')) && rx.requests.some(at('/b')), 15_000, 'the deliveries');
    const toA = rx.requests.filter(at('/a'));
    const toB = rx.requests.filter(at('/b'));
    assert.deepEqual(toA.map((r) => JSON.parse(r.body).type), ['payment.authorized']);
    assert.deepEqual(toB.map((r) => JSON.parse(r.body).type), ['payment.captured']);
    assert.deepEqual(rx.requests.filter(at('/all')).map((r) => JSON.parse(r.body).type).sort(), ['payment.authorized', 'payment.captured']);
    assert.equal(rx.requests.filter(at('/off')).length, 0, 'a disabled endpoint receives nothing');
    assert.ok(signedWith(a.secret, toA[0]!) && !signedWith(b.secret, toA[0]!), 'A: its own secret only');
    assert.ok(signedWith(b.secret, toB[0]!) && !signedWith(a.secret, toB[0]!), 'B: its own secret only');
    assert.equal(toB[0]!.headers['x-b'], 'bee');
    assert.equal(toA[0]!.headers['x-b'], undefined);
    // One delivery per endpoint, each with its own id.
    const deliveryIds = rx.requests.filter((r) => ['/a', '/b', '/all'].includes(r.path)).map((r) => r.headers['payd-delivery-id']);
    assert.equal(new Set(deliveryIds).size, deliveryIds.length);

    // Rotation: the new secret signs at once, the previous one alongside for the overlap.
    const rotated = await call(fan, 'POST', `/v2/webhook-endpoints/${b.id}/secret/rotate`, { previous_secret_valid_seconds: 3600 }, { 'x-idempotency-key': 'rot-b-1' });
    assert.equal(rotated.statusCode, 200, rotated.body);
    assert.equal(rotated.json().version, 2);
    assert.notEqual(rotated.json().secret, b.secret);
    expectProblem(await call(fan, 'POST', `/v2/webhook-endpoints/${b.id}/secret/rotate`, { previous_secret_valid_seconds: 3600 }, { 'x-idempotency-key': 'rot-b-1' }), 409);

    // A test event: to B only (whatever its enabled_events), signed with both secrets during the overlap.
    const before = rx.requests.length;
    const test = await call(fan, 'POST', `/v2/webhook-endpoints/${b.id}/test`);
    assert.equal(test.statusCode, 202, test.body);
    assert.equal(test.json().type, 'webhook_endpoint.test');
    const got = (await waitFor(() => rx.requests.slice(before).find((r) => r.headers['payd-event-id'] === test.json().id), 15_000, 'the test event'))!;
    assert.equal(got.path, '/b');
    assert.equal(JSON.parse(got.body).data.endpoint_id, b.id);
    assert.ok(signedWith(rotated.json().secret, got) && signedWith(b.secret, got), 'new and previous secret');
    // The test event was delivered once, to B (nothing else arrives for it: its one delivery is DELIVERED).
    const ev = (await t.app.inject({ url: `/admin/v1/entities/${fan.entityId}/webhook-events/${test.json().id}`, headers: t.adminHeaders })).json();
    assert.equal(ev.deliveries.length, 1);
    assert.equal(ev.deliveries[0].url, `${rx.url}/b`);
    assert.equal(rx.requests.filter((r) => r.headers['payd-event-id'] === test.json().id).length, 1);

    // The overlap ends (moved into the past on the row instead of waited for: the database's
    // clock decides it, not the app's): only the new secret signs.
    await t.testDb.db.query(`UPDATE webhook_endpoints SET previous_expires_at = now() - interval '1 second' WHERE id = $1`, [b.id]);
    const afterOverlap = await call(fan, 'POST', `/v2/webhook-endpoints/${b.id}/test`);
    assert.equal(afterOverlap.statusCode, 202, afterOverlap.body);
    const late = (await waitFor(() => rx.requests.find((r) => r.headers['payd-event-id'] === afterOverlap.json().id), 15_000, 'the test event after the overlap'))!;
    assert.equal(late.path, '/b');
    assert.equal([...String(late.headers['payd-signature']).matchAll(/v1=/g)].length, 1, 'one signature');
    assert.ok(signedWith(rotated.json().secret, late), 'the new secret signs');
    assert.ok(!signedWith(b.secret, late), 'the previous secret no longer signs');
    void off;
    void all;
  });

  it('a test event honours x-idempotency-key: the same key again sends nothing more (409 naming the first event, same_request true); the key on another endpoint is another request', async () => {
    const keyed = await t.createMerchant('Keyed test shop');
    const a = (await call(keyed, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}/keyed-a` })).json();
    const b = (await call(keyed, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}/keyed-b` })).json();
    const testEvents = async () => (await call(keyed, 'GET', '/v2/events?type=webhook_endpoint.test')).json().data.map((e: { id: string }) => e.id) as string[];
    const key = { 'x-idempotency-key': 'test-event-1' };

    // A refusal gives the key back: a 404 with it, then the same key works.
    expectProblem(await call(keyed, 'POST', '/v2/webhook-endpoints/00000000-0000-4000-8000-000000000000/test', undefined, key), 404);
    const first = await call(keyed, 'POST', `/v2/webhook-endpoints/${a.id}/test`, undefined, key);
    assert.equal(first.statusCode, 202, first.body);
    const replay = expectProblem(await call(keyed, 'POST', `/v2/webhook-endpoints/${a.id}/test`, undefined, key), 409);
    assert.equal(replay.type, 'urn:eu.service:write-conflict');
    assert.equal(replay.resource_id, first.json().id, 'the first call\'s event, which GET /v2/events/{id} reads back');
    assert.equal(replay.same_request, true);
    assert.deepEqual(await testEvents(), [first.json().id], 'one event for one key');
    assert.equal((await call(keyed, 'GET', `/v2/events/${replay.resource_id}`)).json().data.endpoint_id, a.id);

    // The same key on another endpoint is another request: 409, same_request false, nothing sent to B.
    const elsewhere = expectProblem(await call(keyed, 'POST', `/v2/webhook-endpoints/${b.id}/test`, undefined, key), 409);
    assert.equal(elsewhere.resource_id, first.json().id);
    assert.equal(elsewhere.same_request, false);
    assert.deepEqual(await testEvents(), [first.json().id]);

    // Another key is another test event.
    const second = await call(keyed, 'POST', `/v2/webhook-endpoints/${a.id}/test`, undefined, { 'x-idempotency-key': 'test-event-2' });
    assert.equal(second.statusCode, 202, second.body);
    assert.deepEqual((await testEvents()).sort(), [first.json().id, second.json().id].sort());
    await waitFor(() => rx.requests.filter(at('/keyed-a')).length >= 2, 15_000, 'the two test events');
    assert.equal(rx.requests.filter(at('/keyed-b')).length, 0);
  });

  it('a key used on one endpoint\'s rotation or one event\'s resend is another request on another one (409 same_request false, nothing done)', async () => {
    const keyed = await t.createMerchant('Keyed rotation shop');
    const a = (await call(keyed, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}/rot-a` })).json();
    const b = (await call(keyed, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}/rot-b` })).json();
    const key = { 'x-idempotency-key': 'rotation-1' };
    const rotated = await call(keyed, 'POST', `/v2/webhook-endpoints/${a.id}/secret/rotate`, {}, key);
    assert.equal(rotated.statusCode, 200, rotated.body);
    const elsewhere = expectProblem(await call(keyed, 'POST', `/v2/webhook-endpoints/${b.id}/secret/rotate`, {}, key), 409);
    assert.equal(elsewhere.same_request, false, 'B\'s rotation is not a retry of A\'s (an SDK would report it done)');
    assert.equal((await call(keyed, 'GET', `/v2/webhook-endpoints/${b.id}`)).json().version, b.version, 'B not rotated');

    const e1 = (await call(keyed, 'POST', `/v2/webhook-endpoints/${a.id}/test`, undefined, { 'x-idempotency-key': 'ev-1' })).json().id as string;
    const e2 = (await call(keyed, 'POST', `/v2/webhook-endpoints/${a.id}/test`, undefined, { 'x-idempotency-key': 'ev-2' })).json().id as string;
    const resend = { 'x-idempotency-key': 'resend-1' };
    const first = await call(keyed, 'POST', `/v2/events/${e1}/resend`, {}, resend);
    assert.ok(first.statusCode < 300, first.body);
    assert.equal(expectProblem(await call(keyed, 'POST', `/v2/events/${e1}/resend`, {}, resend), 409).same_request, true);
    assert.equal(expectProblem(await call(keyed, 'POST', `/v2/events/${e2}/resend`, {}, resend), 409).same_request, false);
  });

  it('keeps the singular routes: they manage the default endpoint, listed with is_default and signed with the entity secret', async () => {
    const legacy = await t.createMerchant('Legacy shop');
    const put = await t.app.inject({ method: 'PUT', url: '/v2/webhook-endpoint', headers: legacy.auth, payload: { url: `${rx.url}/legacy` } });
    assert.equal(put.statusCode, 200, put.body);
    const entitySecret = put.json().secret as string;
    const extra = (await call(legacy, 'POST', '/v2/webhook-endpoints', { url: `${rx.url}/extra`, enabled_events: ['payment.authorized'] })).json();
    const list = (await call(legacy, 'GET', '/v2/webhook-endpoints')).json();
    const def = list.data.find((e: { is_default: boolean }) => e.is_default);
    assert.equal(def.id, put.json().id);
    assert.deepEqual(def.enabled_events, ['*']);
    assert.equal(list.data.length, 2);

    const pay = await call(legacy, 'POST', '/v2/payments', payment(700), { 'x-idempotency-key': 'legacy-1' });
    assert.equal(pay.statusCode, 200, pay.body);
    const toLegacy = (await waitFor(() => rx.requests.find((r) => r.path === '/legacy'), 15_000, 'the default endpoint\'s delivery'))!;
    const toExtra = (await waitFor(() => rx.requests.find((r) => r.path === '/extra'), 15_000, 'the extra endpoint\'s delivery'))!;
    assert.ok(signedWith(entitySecret, toLegacy), 'the default endpoint signs with the entity secret');
    assert.ok(signedWith(extra.secret, toExtra) && !signedWith(entitySecret, toExtra));

    // Deleting the default through the singular route leaves the other one.
    assert.equal((await t.app.inject({ method: 'DELETE', url: '/v2/webhook-endpoint', headers: legacy.auth })).statusCode, 204);
    assert.deepEqual((await call(legacy, 'GET', '/v2/webhook-endpoints')).json().data.map((e: { id: string }) => e.id), [extra.id]);
  });
});
