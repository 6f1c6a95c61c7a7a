// Signed deliveries to a real HTTP receiver on loopback: payload, headers, signature,
// retries with backoff after 500s and timeouts, giving up, redirects, the delivery log.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';
import { verifyWebhookSignature } from '../../src/webhooks/index.ts';
import { enqueue, FAST, getEvent, Polls, type Receiver, secretOf, setEndpoint, settled, startReceiver, startWebhookApp, stopWebhookApp, waitFor } from './helpers.ts';

/** The event once its first attempt is recorded (everything that attempt did, done). */
async function firstAttempted(t: TestApp, entityId: string, eventId: string) {
  return waitFor(async () => {
    const e = await getEvent(t, entityId, eventId);
    return e.deliveries[0]?.attempts.length ? e : undefined;
  }, 10_000, `the first attempt of event ${eventId}`);
}

describe('webhook deliveries', () => {
  let t: TestApp;
  let rx: Receiver;
  before(async () => ({ t, rx } = await startWebhookApp()));
  after(() => stopWebhookApp({ t, rx }));

  it('POSTs the signed envelope to the entity endpoint with its headers; the signature verifies', async () => {
    const m = await t.createMerchant();
    await setEndpoint(t, m.entityId, `${rx.url}/default`, [{ name: 'x-merchant-auth', values: ['token-1'] }]);
    const data = { id: crypto.randomUUID(), amount: 1234, currency: 'EUR', nested: { ok: true } };
    const { id, deliveryId } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data });
    assert.ok(deliveryId);
    const event = await settled(t, m.entityId, id);
    assert.equal(event.status, 'DELIVERED');

    const got = rx.requests.filter((r) => r.headers['payd-event-id'] === id);
    assert.equal(got.length, 1);
    const r = got[0]!;
    assert.equal(r.path, '/default');
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(r.headers['payd-event-type'], 'payment.captured');
    assert.equal(r.headers['payd-delivery-id'], deliveryId);
    assert.equal(r.headers['x-merchant-auth'], 'token-1');
    const body = JSON.parse(r.body);
    assert.deepEqual(Object.keys(body).sort(), ['created_at', 'data', 'entity_id', 'id', 'type']);
    assert.equal(body.id, id);
    assert.equal(body.entity_id, m.entityId);
    assert.deepEqual(body.data, data);
    assert.equal(body.created_at, event.created_at);

    const secret = await secretOf(t.app, t.adminHeaders, m.entityId);
    const header = String(r.headers['payd-signature']);
    assert.equal(verifyWebhookSignature(secret, header, r.body), true);
    // Independent recomputation: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>.
    const m1 = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
    assert.ok(m1, header);
    assert.ok(Math.abs(Number(m1[1]) - Date.now() / 1000) < 60);
    assert.equal(createHmac('sha256', secret).update(`${m1[1]}.${r.body}`).digest('hex'), m1[2]);
    // A tampered body, another secret or an old timestamp do not verify.
    assert.equal(verifyWebhookSignature(secret, header, r.body.replace('1234', '1235')), false);
    assert.equal(verifyWebhookSignature(`${secret}x`, header, r.body), false);
    assert.equal(verifyWebhookSignature(secret, header, r.body, 300, Number(m1[1]) + 301), false);

    // The delivery log has the one attempt.
    const d = event.deliveries[0];
    assert.equal(d.status, 'DELIVERED');
    assert.equal(d.attempt_count, 1);
    assert.deepEqual(d.header_names, ['x-merchant-auth']);
    assert.equal(d.attempts.length, 1);
    assert.equal(d.attempts[0].status_code, 200);
    assert.equal(d.attempts[0].response_body, 'ok');
    assert.equal(d.attempts[0].error, null);
  });

  it("sends an event with its own target (a link's webhook) there, with the spec's multi-value headers", async () => {
    const m = await t.createMerchant();
    await setEndpoint(t, m.entityId, `${rx.url}/default`);
    const headers = [{ name: 'X-Link-Token', values: ['a', 'b, with a comma'] }, { name: 'x-other', values: ['c'] }];
    const { id } = await enqueue(t.testDb.db, {
      entityId: m.entityId, type: 'payment_link.paid', data: { link: 1 }, url: `${rx.url}/link?ref=9`, headers,
    });
    const event = await settled(t, m.entityId, id);
    assert.equal(event.status, 'DELIVERED');
    assert.equal(event.target, 'EVENT');
    const r = rx.requests.find((x) => x.headers['payd-event-id'] === id)!;
    assert.equal(r.path, '/link?ref=9');
    // One header line per value (docs/webhooks.md), so a value's own comma survives.
    const lines = (name: string) => r.rawHeaders.flatMap((v, i) => (i % 2 === 0 && v.toLowerCase() === name ? [r.rawHeaders[i + 1]] : []));
    assert.deepEqual(lines('x-link-token'), ['a', 'b, with a comma']);
    assert.deepEqual(lines('x-other'), ['c']);
    assert.equal(r.headers['x-other'], 'c');
    // Signed with the entity's secret like any other event.
    assert.equal(verifyWebhookSignature(await secretOf(t.app, t.adminHeaders, m.entityId), String(r.headers['payd-signature']), r.body), true);
  });

  it('retries after 500s with growing, jittered waits, then delivers; each attempt is logged', async () => {
    const m = await t.createMerchant();
    await setEndpoint(t, m.entityId, `${rx.url}/flaky`);
    const seen = new Map<string, number>();
    rx.respond = (req) => {
      const id = String(req.headers['payd-event-id']);
      const n = (seen.get(id) ?? 0) + 1;
      seen.set(id, n);
      return n <= 3 ? { status: 500, body: `boom ${n}` } : { status: 204 };
    };
    const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.authorized', data: { x: 1 } });
    const event = await settled(t, m.entityId, id);
    rx.respond = () => ({ status: 200, body: 'ok' });
    assert.equal(event.status, 'DELIVERED');
    const got = rx.requests.filter((r) => r.headers['payd-event-id'] === id);
    assert.equal(got.length, 4);
    assert.equal(new Set(got.map((r) => r.body)).size, 1, 'every attempt sends the same body');
    const attempts = event.deliveries[0].attempts;
    // The wait between the end of an attempt and the start of the next: with base 100 ms,
    // 100, 200, 400 ms, each within -25 %/+25 % (plus polling and recording time).
    const gaps = attempts.slice(1).map((a: any, i: number) =>
      Date.parse(a.started_at) - Date.parse(attempts[i].started_at) - attempts[i].duration_ms);
    gaps.forEach((g: number, i: number) => {
      const nominal = 100 * 2 ** i;
      assert.ok(g >= nominal * 0.75 - 2, `gap ${i} = ${g} ms, expected at least ${nominal * 0.75}`);
      assert.ok(g <= nominal * 1.25 + 1000, `gap ${i} = ${g} ms, expected about ${nominal}`);
    });
    assert.ok(gaps[2] > gaps[0], `waits grow: ${gaps.join(', ')}`);
    assert.deepEqual(attempts.map((a: any) => a.number), [1, 2, 3, 4]);
    assert.deepEqual(attempts.map((a: any) => a.status_code), [500, 500, 500, 204]);
    assert.deepEqual(attempts.slice(0, 3).map((a: any) => a.error), ['HTTP 500', 'HTTP 500', 'HTTP 500']);
    assert.equal(attempts[1].response_body, 'boom 2');
    assert.equal(event.deliveries[0].attempt_count, 4);
  });

  it('does not follow redirects and keeps only the start of a long response body', async () => {
    const m = await t.createMerchant();
    await setEndpoint(t, m.entityId, `${rx.url}/moved`);
    rx.respond = (req) => req.path === '/moved'
      ? { status: 302, headers: { location: `${rx.url}/elsewhere` }, body: 'x'.repeat(10_000) }
      : { status: 200 };
    const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
    // A redirect followed would have been within the attempt, before it was recorded.
    const event = await firstAttempted(t, m.entityId, id);
    rx.respond = () => ({ status: 200, body: 'ok' });
    assert.equal(rx.requests.filter((r) => r.path === '/elsewhere').length, 0);
    const a = event.deliveries[0].attempts[0];
    assert.equal(a.status_code, 302);
    assert.match(a.error, /^redirect 302 not followed \(location: http:\/\/127\.0\.0\.1:\d+\/elsewhere\)$/);
    assert.equal(a.response_body.length, 2049);
    assert.equal(event.status, 'PENDING');
  });

  it('logs connection errors as failed attempts', async () => {
    const m = await t.createMerchant();
    await setEndpoint(t, m.entityId, `http://127.0.0.1:${await freePort()}/closed`);
    const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
    const event = await firstAttempted(t, m.entityId, id);
    const a = event.deliveries[0].attempts[0];
    assert.equal(a.status_code, null);
    assert.match(a.error, /ECONNREFUSED/);
  });
});

describe('webhook deliveries that never succeed', () => {
  it('counts a timeout as a failed attempt and retries', async () => {
    const t = await createTestApp({ ...FAST, webhookTimeoutMs: 1000 });
    // The first call answers after the timeout; the next ones at once.
    const rx = await startReceiver((_req, n) => (n === 0 ? { status: 200, delayMs: 3000 } : { status: 200, body: 'fast' }));
    try {
      t.app.webhooks.dispatcher.start();
      const m = await t.createMerchant();
      await setEndpoint(t, m.entityId, `${rx.url}/slow`);
      const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
      const event = await settled(t, m.entityId, id);
      assert.equal(event.status, 'DELIVERED');
      const attempts = event.deliveries[0].attempts;
      assert.equal(attempts.length, 2);
      assert.equal(attempts[0].status_code, null);
      assert.equal(attempts[0].error, 'timeout after 1000 ms');
      assert.ok(attempts[0].duration_ms >= 990 && attempts[0].duration_ms < 2900, String(attempts[0].duration_ms));
      assert.equal(attempts[1].status_code, 200);
      const got = rx.requests.filter((r) => r.headers['payd-event-id'] === id);
      assert.equal(got.length, 2);
      const gap = Date.parse(attempts[1].started_at) - Date.parse(attempts[0].started_at);
      assert.ok(gap >= 1000 + 75, `the retry waits for the timeout and the backoff (${gap} ms)`);
    } finally {
      await t.close();
      await rx.close();
    }
  });

  it('give up after the maximum age: FAILED, and no more calls', async () => {
    const t = await createTestApp({ ...FAST, webhookMaxAgeMs: 1000 });
    const rx = await startReceiver(() => ({ status: 503, body: 'down' }));
    const polls = new Polls();
    try {
      t.app.webhooks.dispatcher.start(undefined, polls.polled);
      const m = await t.createMerchant();
      await setEndpoint(t, m.entityId, rx.url);
      const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
      const event = await settled(t, m.entityId, id);
      assert.equal(event.status, 'FAILED');
      const d = event.deliveries[0];
      assert.equal(d.next_attempt_at, null);
      assert.equal(d.last_status_code, 503);
      assert.ok(d.attempt_count >= 2 && d.attempt_count <= 6, `attempts: ${d.attempt_count}`);
      assert.equal(d.attempts.length, d.attempt_count);
      // The last attempt came before the window closed, and nothing follows.
      const count = rx.requests.length;
      assert.equal(count, d.attempt_count);
      await polls.more(); // the dispatcher polled again since: nothing was due
      assert.equal(rx.requests.length, count);
      const failed = await t.app.inject({ url: `/admin/v1/entities/${m.entityId}/webhook-events?status=FAILED`, headers: t.adminHeaders });
      assert.deepEqual(failed.json().data.map((e: any) => e.id), [id]);
    } finally {
      await t.close();
      await rx.close();
    }
  });
});
