// Operator API of webhooks: endpoints, secrets (shown once, revealed, rotated with an
// overlap), tenant isolation, and bad inputs that answer a clear 4xx and change nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { expectProblem, type TestApp } from '../helpers/app.ts';
import { verifyWebhookSignature } from '../../src/webhooks/index.ts';
import { enqueue, type Receiver, secretOf, setEndpoint, settled, startWebhookApp, stopWebhookApp, tableCounts } from './helpers.ts';

describe('webhook operator API', () => {
  let t: TestApp;
  let rx: Receiver;
  before(async () => ({ t, rx } = await startWebhookApp()));
  after(() => stopWebhookApp({ t, rx }));
  const endpointUrl = (id: string) => `/admin/v1/entities/${id}/webhook-endpoint`;

  it('sets, reads, replaces and removes the default endpoint; the secret is in the first response only', async () => {
    const m = await t.createMerchant();
    expectProblem(await t.app.inject({ url: endpointUrl(m.entityId), headers: t.adminHeaders }), 404);
    const first = await setEndpoint(t, m.entityId, 'https://merchant.example/hooks', [{ name: 'Authorization', values: ['Bearer abc'] }]);
    assert.match(first.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(first.headers, [{ name: 'Authorization', values: ['[redacted]'] }], 'header values are never shown again');
    const second = await setEndpoint(t, m.entityId, 'https://merchant.example/v2');
    assert.equal(second.secret, undefined);
    assert.deepEqual(second.headers, []);
    const got = await t.app.inject({ url: endpointUrl(m.entityId), headers: t.adminHeaders });
    assert.equal(got.json().url, 'https://merchant.example/v2');
    assert.equal(await secretOf(t.app, t.adminHeaders, m.entityId), first.secret);
    const del = await t.app.inject({ method: 'DELETE', url: endpointUrl(m.entityId), headers: t.adminHeaders });
    assert.equal(del.statusCode, 204);
    expectProblem(await t.app.inject({ method: 'DELETE', url: endpointUrl(m.entityId), headers: t.adminHeaders }), 404);
    expectProblem(await t.app.inject({ url: endpointUrl(m.entityId), headers: t.adminHeaders }), 404);
  });

  it('rotates the secret: both sign during the overlap, then only the new one', async () => {
    const m = await t.createMerchant();
    await setEndpoint(t, m.entityId, rx.url);
    const old = await secretOf(t.app, t.adminHeaders, m.entityId);
    const rotate = (payload?: unknown) => t.app.inject({
      method: 'POST', url: `/admin/v1/entities/${m.entityId}/webhook-secret/rotate`, headers: t.adminHeaders,
      ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}),
    });
    const r1 = await rotate();
    assert.equal(r1.statusCode, 200, r1.body);
    const fresh = r1.json();
    assert.notEqual(fresh.secret, old);
    assert.equal(fresh.version, 2);
    assert.ok(new Date(fresh.previous_expires_at).getTime() - Date.now() > 86_000_000);
    assert.equal(await secretOf(t.app, t.adminHeaders, m.entityId), fresh.secret);

    const deliverOne = async () => {
      const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
      await settled(t, m.entityId, id);
      return rx.requests.find((r) => r.headers['payd-event-id'] === id)!;
    };
    const during = await deliverOne();
    const header = String(during.headers['payd-signature']);
    assert.match(header, /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    assert.equal(verifyWebhookSignature(fresh.secret, header, during.body), true);
    assert.equal(verifyWebhookSignature(old, header, during.body), true);

    const r2 = await rotate({ previous_secret_valid_seconds: 0 });
    assert.equal(r2.statusCode, 200, r2.body);
    assert.equal(r2.json().previous_expires_at, null);
    const afterRotation = await deliverOne();
    const h2 = String(afterRotation.headers['payd-signature']);
    assert.match(h2, /^t=\d+,v1=[0-9a-f]{64}$/);
    assert.equal(verifyWebhookSignature(r2.json().secret, h2, afterRotation.body), true);
    assert.equal(verifyWebhookSignature(fresh.secret, h2, afterRotation.body), false);
    // The secret is stored encrypted, never in clear.
    const { rows } = await t.testDb.db.query<{ s: string }>('SELECT secret_enc || coalesce(previous_secret_enc, \'\') AS s FROM webhook_secrets WHERE entity_id = $1', [m.entityId]);
    assert.ok(!rows[0]!.s.includes(r2.json().secret.slice(6)));
  });

  it("keeps entities apart: another entity's event is a 404", async () => {
    const a = await t.createMerchant();
    const b = await t.createMerchant();
    await setEndpoint(t, a.entityId, rx.url);
    const { id } = await enqueue(t.testDb.db, { entityId: a.entityId, type: 'payment.captured', data: { secret: 'a' } });
    await settled(t, a.entityId, id);
    const before = await tableCounts(t.testDb.db);
    expectProblem(await t.app.inject({ url: `/admin/v1/entities/${b.entityId}/webhook-events/${id}`, headers: t.adminHeaders }), 404);
    expectProblem(await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${b.entityId}/webhook-events/${id}/replay`, headers: t.adminHeaders }), 404);
    const list = await t.app.inject({ url: `/admin/v1/entities/${b.entityId}/webhook-events`, headers: t.adminHeaders });
    assert.deepEqual(list.json().data, []);
    const cursor = await t.app.inject({ url: `/admin/v1/entities/${b.entityId}/webhook-events?starting_after=${id}`, headers: t.adminHeaders });
    assert.equal(expectProblem(cursor, 400).invalid_params?.[0]?.name, 'starting_after');
    assert.deepEqual(await tableCounts(t.testDb.db), before);
  });

  it('refuses bad inputs with a 4xx naming the field, and changes nothing', async () => {
    const m = await t.createMerchant();
    await setEndpoint(t, m.entityId, 'https://merchant.example/keep', [{ name: 'x-keep', values: ['1'] }]);
    const before = await tableCounts(t.testDb.db);
    const put = (payload: unknown, id = m.entityId) => t.app.inject({
      method: 'PUT', url: endpointUrl(id), headers: t.adminHeaders, payload: payload as Record<string, unknown>,
    });
    const cases: Array<[unknown, string]> = [
      [{}, 'url'],
      [{ url: 42 }, 'url'],
      [{ url: '' }, 'url'],
      [{ url: 'ftp://merchant.example/x' }, 'url'],
      [{ url: 'merchant.example/x' }, 'url'],
      [{ url: 'https://u:p@merchant.example/x' }, 'url'],
      [{ url: 'https://merchant.example:22/x' }, 'url'],
      [{ url: `https://merchant.example/${'x'.repeat(2100)}` }, 'url'],
      [{ url: 'https://merchant.example/x', extra: true }, 'extra'],
      [{ url: 'https://merchant.example/x', headers: { name: 'a', values: ['b'] } }, 'headers'],
      [{ url: 'https://merchant.example/x', headers: [{ name: 'a', values: 'b' }] }, 'headers[0].values'],
      [{ url: 'https://merchant.example/x', headers: [{ name: 'a', values: [] }] }, 'headers[0].values'],
      [{ url: 'https://merchant.example/x', headers: [{ name: 'a', values: [1] }] }, 'headers[0].values[0]'],
      [{ url: 'https://merchant.example/x', headers: [{ name: 'a b', values: ['c'] }] }, 'headers[0].name'],
      [{ url: 'https://merchant.example/x', headers: [{ name: 'a', values: ['c\r\nx-injected: 1'] }] }, 'headers[0].values[0]'],
      [{ url: 'https://merchant.example/x', headers: [{ name: 'Content-Type', values: ['text/plain'] }] }, 'headers[0].name'],
      [{ url: 'https://merchant.example/x', headers: [{ name: 'payd-event-id', values: ['x'] }] }, 'headers[0].name'],
      [{ url: 'https://merchant.example/x', headers: [{ name: 'a', values: ['b'], other: 1 }] }, 'headers[0].other'],
    ];
    for (const [payload, field] of cases) {
      const p = expectProblem(await put(payload), 400);
      assert.ok(p.invalid_params?.some((x) => x.name === field && x.in === 'body'), `${JSON.stringify(payload).slice(0, 80)}: ${JSON.stringify(p.invalid_params)}`);
    }
    expectProblem(await t.app.inject({ method: 'PUT', url: endpointUrl(m.entityId), headers: { ...t.adminHeaders, 'content-type': 'application/json' }, payload: '{"url":' }), 400);
    expectProblem(await t.app.inject({ method: 'PUT', url: endpointUrl(m.entityId), headers: { ...t.adminHeaders, 'content-type': 'text/plain' }, payload: 'https://x' }), 415);
    // Unknown entity: 404 everywhere, even with a valid body.
    const ghost = randomUUID();
    expectProblem(await put({ url: 'https://merchant.example/x' }, ghost), 404);
    for (const url of [endpointUrl(ghost), `/admin/v1/entities/${ghost}/webhook-secret`, `/admin/v1/entities/${ghost}/webhook-events`,
      `/admin/v1/entities/${ghost}/webhook-events/${randomUUID()}`]) {
      expectProblem(await t.app.inject({ url, headers: t.adminHeaders }), 404);
    }
    expectProblem(await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${ghost}/webhook-secret/rotate`, headers: t.adminHeaders }), 404);
    expectProblem(await t.app.inject({ method: 'DELETE', url: endpointUrl(ghost), headers: t.adminHeaders }), 404);
    expectProblem(await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${m.entityId}/webhook-events/${randomUUID()}/replay`, headers: t.adminHeaders }), 404);
    // Malformed ids, queries and rotation bodies.
    const badId = expectProblem(await t.app.inject({ url: '/admin/v1/entities/nope/webhook-events', headers: t.adminHeaders }), 400);
    assert.equal(badId.invalid_params?.[0]?.in, 'path');
    const badEvent = expectProblem(await t.app.inject({ url: `/admin/v1/entities/${m.entityId}/webhook-events/nope`, headers: t.adminHeaders }), 400);
    assert.equal(badEvent.invalid_params?.[0]?.name, 'event_id');
    for (const [q, field] of [['limit=0', 'limit'], ['limit=abc', 'limit'], ['status=LOST', 'status'], ['starting_after=x', 'starting_after'], ['foo=1', 'foo']]) {
      const p = expectProblem(await t.app.inject({ url: `/admin/v1/entities/${m.entityId}/webhook-events?${q}`, headers: t.adminHeaders }), 400);
      assert.equal(p.invalid_params?.[0]?.name, field, q);
    }
    for (const payload of [{ previous_secret_valid_seconds: -1 }, { previous_secret_valid_seconds: '60' }, { previous_secret_valid_seconds: 604801 }, { other: 1 }]) {
      const p = expectProblem(await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${m.entityId}/webhook-secret/rotate`, headers: t.adminHeaders, payload }), 400);
      assert.ok(p.invalid_params?.length, JSON.stringify(p));
    }
    // Without the operator token.
    expectProblem(await t.app.inject({ url: `/admin/v1/entities/${m.entityId}/webhook-secret` }), 401);
    expectProblem(await t.app.inject({ url: `/admin/v1/entities/${m.entityId}/webhook-secret`, headers: m.auth }), 401);
    assert.deepEqual(await tableCounts(t.testDb.db), before);
    const kept = (await t.app.inject({ url: endpointUrl(m.entityId), headers: t.adminHeaders })).json();
    assert.equal(kept.url, 'https://merchant.example/keep');
    assert.deepEqual(kept.headers, [{ name: 'x-keep', values: ['[redacted]'] }]);
  });

  it('documents the operator routes in /openapi.json', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const ops = [
      ['/admin/v1/entities/{id}/webhook-endpoint', 'put'], ['/admin/v1/entities/{id}/webhook-endpoint', 'get'],
      ['/admin/v1/entities/{id}/webhook-endpoint', 'delete'], ['/admin/v1/entities/{id}/webhook-secret', 'get'],
      ['/admin/v1/entities/{id}/webhook-secret/rotate', 'post'], ['/admin/v1/entities/{id}/webhook-events', 'get'],
      ['/admin/v1/entities/{id}/webhook-events/{event_id}', 'get'], ['/admin/v1/entities/{id}/webhook-events/{event_id}/replay', 'post'],
    ];
    for (const [path, method] of ops) {
      const op = doc.paths[path!]?.[method!];
      assert.ok(op, `${method} ${path}`);
      assert.deepEqual(op.tags, ['Operator']);
      assert.ok(op.summary && op.description, `${method} ${path} has a summary and a description`);
    }
  });
});
