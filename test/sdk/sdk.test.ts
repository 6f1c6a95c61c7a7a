// The SDK (sdk/, @payd/sdk) against a real payd process (`payd start`), through an HTTP
// proxy that can lose an answer: the request reaches payd, payd acts, and the client
// never hears back. The SDK's retry then carries the same idempotency key, payd answers
// 409 with resource_id and same_request true, and the SDK returns the first call's
// outcome: at most once. A key reused by a different request is an IdempotencyError.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { ADMIN_TOKEN } from '../helpers/app.ts';
import { startPayd, type PaydProcess } from '../helpers/processes.ts';
import { poll, waitFor } from '../helpers/wait.ts';
import { createPgTestDb } from '../faults/db-fixture.ts';
import {
  AmountNotAvailableError, AuthenticationError, constructEvent, IdempotencyError, InvalidRequestError, NotFoundError, Payd,
  signPayload, WebhookSignatureError,
} from '../../sdk/src/index.ts';
import { signWebhook } from '../../src/webhooks/signature.ts';

const card = { type: 'CARD' as const, number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
const paymentBody = (amount: number) => ({ amount, currency: 'EUR' as const, split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });

interface Seen { method: string; url: string; key: string | undefined; status: number; body: string; headers: http.IncomingHttpHeaders }

/** Forwards to payd; `loseNext` makes it drop the answer of the next matching request after payd answered it. */
async function startProxy(target: string) {
  const seen: Seen[] = [];
  const rules: Array<{ match: (req: http.IncomingMessage) => boolean; action: 'lose' | { status: number; headers: Record<string, string>; body: string } }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const rule = rules.findIndex((r) => r.match(req));
      const action = rule >= 0 ? rules.splice(rule, 1)[0]!.action : undefined;
      if (action && action !== 'lose') {
        res.writeHead(action.status, action.headers).end(action.body);
        return;
      }
      const headers = { ...req.headers } as Record<string, string>;
      delete headers.host;
      const answer = await fetch(target + req.url, {
        method: req.method, headers, ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
      });
      const body = await answer.text();
      const outHeaders: Record<string, string> = {};
      answer.headers.forEach((value, name) => { outHeaders[name] = value; });
      seen.push({ method: req.method!, url: req.url!, key: req.headers['x-idempotency-key'] as string | undefined, status: answer.status, body, headers: outHeaders });
      if (action === 'lose') {
        res.socket?.destroy(); // payd acted; the client hears nothing
        return;
      }
      delete outHeaders['content-length'];
      delete outHeaders['content-encoding'];
      delete outHeaders['transfer-encoding'];
      delete outHeaders.connection;
      res.writeHead(answer.status, outHeaders).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    loseNext(match: (req: http.IncomingMessage) => boolean) { rules.push({ match, action: 'lose' }); },
    answerNext(match: (req: http.IncomingMessage) => boolean, status: number, headers: Record<string, string>, body: string) {
      rules.push({ match, action: { status, headers, body } });
    },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

describe('@payd/sdk against payd start', () => {
  let server: PaydProcess;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let payd: Payd;
  let entityId = '';
  let apiKey = '';
  let cleanup: () => Promise<void> = async () => {};
  const receiver: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  let hook: http.Server;

  before(async () => {
    let env: Record<string, string>;
    if (process.env.DATABASE_URL) {
      const db = await createPgTestDb();
      env = { DATABASE_URL: db.url, PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };
      cleanup = () => db.close();
    } else {
      const dir = mkdtempSync(path.join(tmpdir(), 'payd-sdk-'));
      env = { PAYD_DATA_DIR: dir };
      cleanup = async () => rmSync(dir, { recursive: true, force: true });
    }
    server = await startPayd({ ...env, PAYD_WEBHOOK_POLL_MS: '100' });
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const entity = await (await fetch(`${server.base}/admin/v1/entities`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'SDK shop' }) })).json();
    entityId = entity.id;
    apiKey = (await (await fetch(`${server.base}/admin/v1/entities/${entityId}/api-keys`, { method: 'POST', headers: { authorization: admin.authorization } })).json()).api_key;
    hook = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => { receiver.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }); res.writeHead(204).end(); });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    const put = await fetch(`${server.base}/admin/v1/entities/${entityId}/webhook-endpoint`, {
      method: 'PUT', headers: admin, body: JSON.stringify({ url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hooks` }),
    });
    assert.equal(put.status, 200, await put.text());
    proxy = await startProxy(server.base);
    payd = new Payd({ apiKey, baseUrl: proxy.url, retryBaseMs: 20 });
  });
  after(async () => {
    await proxy?.close();
    await new Promise<void>((resolve) => (hook ? hook.close(() => resolve()) : resolve()));
    if (server) assert.equal(await server.stop(), 0);
    await cleanup();
  });

  it('runs a whole flow with one token, typed answers and typed errors', async () => {
    const p = await payd.payments.create(paymentBody(5000));
    assert.equal(p.authorization.status, 'AUTHORIZED');
    const captured = await payd.payments.capture(p.id, { amount: 3000, merchant_reference: 'ship-1' });
    assert.equal(captured.replayed, false);
    assert.equal(captured.payment.amounts.total_captured, 3000);
    const op = await payd.payments.operation(p.id, captured.operationId);
    assert.equal(op.kind, 'CAPTURE');
    assert.equal(op.merchant_reference, 'ship-1');
    const refunded = await payd.payments.refund(p.id, { amount: 1000 });
    assert.equal(refunded.payment.amounts.total_refunded, 1000);
    assert.equal((await payd.payments.get(p.id, { maxAgeSeconds: 60 })).version, refunded.payment.version);

    const tooMuch = await payd.payments.capture(p.id, { amount: 999_999 }).catch((e: unknown) => e);
    assert.ok(tooMuch instanceof AmountNotAvailableError, String(tooMuch));
    assert.equal(tooMuch.availableAmount, 2000);
    const bad = await payd.payments.create({ ...paymentBody(100), currency: 'AUD' as never }).catch((e: unknown) => e);
    assert.ok(bad instanceof InvalidRequestError);
    assert.ok(bad.invalidParams.some((x) => x.name === 'currency'));
    assert.ok(bad.requestId);
    const missing = await payd.payments.get(crypto.randomUUID()).catch((e: unknown) => e);
    assert.ok(missing instanceof NotFoundError);
    const wrongKey = await new Payd({ apiKey: 'payd_sk_nope', baseUrl: proxy.url, retryBaseMs: 20 }).payments.get(p.id).catch((e: unknown) => e);
    assert.ok(wrongKey instanceof AuthenticationError, String(wrongKey));

    const jwks = await payd.signingJwks();
    assert.ok(jwks.keys.length > 0);
    const eligible = await payd.eligibleSolutions({ order: { reference: 'o-1' }, customer: {} } as never);
    assert.ok(Array.isArray(eligible.eligible_solutions));

    const session = await payd.clientSessions.create({ amount: 1500, currency: 'EUR', shopper_redirection_url: 'https://shop.example/back' } as never);
    assert.equal((await payd.clientSessions.abort(session.id)).status, 'ABORTED_BY_MERCHANT');

    const listed: string[] = [];
    for await (const x of payd.payments.iterate({ limit: 1, authorization_status: 'AUTHORIZED' })) listed.push(x.id);
    assert.ok(listed.includes(p.id), 'async iteration over GET /v2/payments, page after page');
    assert.deepEqual((await payd.clientSessions.list({ status: 'ABORTED_BY_MERCHANT' })).data.map((s) => s.id), [session.id]);
    // Typed filters (sdk/src/types.ts, from openapi.json): arrays go comma-separated, Dates as ISO 8601, numbers in decimal.
    const since = new Date(Date.parse(p.created_at) - 60_000);
    const filtered = await payd.payments.list({ limit: 5, authorization_status: ['AUTHORIZED', 'REFUSED'], created_gte: since, amount_gte: 1 });
    assert.ok(filtered.data.some((x) => x.id === p.id));
    const sent = proxy.seen.filter((x) => x.url.startsWith('/v2/payments?limit=5')).pop()!;
    assert.equal(sent.url, `/v2/payments?limit=5&authorization_status=AUTHORIZED%2CREFUSED&created_gte=${encodeURIComponent(since.toISOString())}&amount_gte=1`);
    const events: string[] = [];
    for await (const e of payd.events.iterate({ limit: 2 })) events.push(e.type);
    assert.ok(events.includes('payment.captured') && events.includes('payment.refunded'), events.join(','));
    const tokens = proxy.seen.filter((s) => s.url === '/oauth/token' && s.status === 200);
    assert.equal(tokens.length, 1, 'one token served the whole flow');
  });

  it('creates a payment once when the first answer is lost: the retry returns the first call\'s payment', async () => {
    const before = proxy.seen.length;
    proxy.loseNext((req) => req.method === 'POST' && req.url === '/v2/payments');
    const p = await payd.payments.create(paymentBody(4200));
    const calls = proxy.seen.slice(before).filter((s) => s.method === 'POST' && s.url === '/v2/payments');
    assert.equal(calls.length, 2, 'the lost call and its retry');
    assert.equal(calls[0]!.status, 200);
    assert.equal(calls[1]!.status, 409, 'the retry is recognised by its key');
    assert.equal(calls[0]!.key, calls[1]!.key, 'the same idempotency key');
    assert.equal(JSON.parse(calls[0]!.body).id, p.id, 'the payment the lost answer carried');
    assert.equal(p.authorization.status, 'AUTHORIZED');
  });

  it('captures once when the first answer is lost: replayed, with the first operation id', async () => {
    const p = await payd.payments.create(paymentBody(6000));
    const before = proxy.seen.length;
    proxy.loseNext((req) => req.method === 'POST' && req.url === `/v2/payments/${p.id}/captures`);
    const result = await payd.payments.capture(p.id, { amount: 2500 }, { idempotencyKey: `capture-${p.id}-1` });
    const calls = proxy.seen.slice(before).filter((s) => s.url === `/v2/payments/${p.id}/captures`);
    assert.deepEqual(calls.map((c) => c.status), [200, 409]);
    assert.equal(result.replayed, true);
    assert.equal(result.operationId, calls[0]!.headers['x-created-operation-id']);
    assert.equal(result.payment.amounts.total_captured, 2500, 'captured once');
    assert.equal(result.payment.captures.length, 1);
    // A late retry of our own, with the same key, days later: the same answer.
    const late = await payd.payments.capture(p.id, { amount: 2500 }, { idempotencyKey: `capture-${p.id}-1` });
    assert.equal(late.operationId, result.operationId);
    assert.equal(late.payment.amounts.total_captured, 2500);
  });

  it('raises IdempotencyError, never another request\'s resource, when a key is reused by a different request', async () => {
    const p = await payd.payments.create(paymentBody(3000), { idempotencyKey: 'sdk-reused-1' });
    const other = await payd.payments.create(paymentBody(3100), { idempotencyKey: 'sdk-reused-1' }).catch((e: unknown) => e);
    assert.ok(other instanceof IdempotencyError, String(other));
    assert.equal(other.status, 409);
    assert.equal(other.resourceId, p.id, 'names the payment the first request created');
    assert.equal(other.sameRequest, false);
    const cap = await payd.payments.capture(p.id, { amount: 1000 }, { idempotencyKey: 'sdk-op-1' });
    const otherOp = await payd.payments.refund(p.id, { amount: 500 }, { idempotencyKey: 'sdk-op-1' }).catch((e: unknown) => e);
    assert.ok(otherOp instanceof IdempotencyError, String(otherOp));
    assert.equal(otherOp.resourceId, cap.operationId);
    const creationKey = await payd.payments.capture(p.id, { amount: 1000 }, { idempotencyKey: 'sdk-reused-1' }).catch((e: unknown) => e);
    assert.ok(creationKey instanceof IdempotencyError, String(creationKey));
    assert.equal(creationKey.resourceId, p.id);
    const session = await payd.clientSessions.create({ amount: 1200, currency: 'EUR' } as never, { idempotencyKey: 'sdk-cs-1' });
    const otherSession = await payd.clientSessions.create({ amount: 1300, currency: 'EUR' } as never, { idempotencyKey: 'sdk-cs-1' }).catch((e: unknown) => e);
    assert.ok(otherSession instanceof IdempotencyError, String(otherSession));
    assert.equal(otherSession.resourceId, session.id);
    const after = await payd.payments.get(p.id);
    assert.equal(after.amounts.total_captured, 1000);
    assert.equal(after.refunds.length, 0);
  });

  it('sends a key with every creating request; a lost answer of a session or a link returns the first one', async () => {
    const before = proxy.seen.length;
    proxy.loseNext((req) => req.method === 'POST' && req.url === '/v2/client-sessions');
    const session = await payd.clientSessions.create({ amount: 1400, currency: 'EUR' } as never);
    proxy.loseNext((req) => req.method === 'POST' && req.url === '/v2/payment-links');
    const link = await payd.paymentLinks.create({ amount: 1500, currency: 'EUR' } as never);
    const calls = (url: string) => proxy.seen.slice(before).filter((s) => s.method === 'POST' && s.url === url);
    for (const [url, id] of [['/v2/client-sessions', session.id], ['/v2/payment-links', link.id]] as const) {
      const c = calls(url);
      assert.deepEqual(c.map((x) => x.status), [200, 409], url);
      assert.ok(c[0]!.key && c[0]!.key === c[1]!.key, `${url}: one key kept across the retry`);
      assert.equal(JSON.parse(c[0]!.body).id, id, `${url}: the first call's resource`);
    }
    assert.equal((await payd.clientSessions.list()).data.filter((s) => s.amount === 1400).length, 1, 'one session');
  });

  it('saved cards: saved by a payment, listed, paid with (merchant-initiated), deleted once when the answer is lost', async () => {
    const saving = await payd.payments.create({ ...paymentBody(1800), allow_future_usage: true, customer: { reference: 'sdk-customer' } });
    const savedId = saving.authorization.partner_transactions[0]!.saved_card_id!;
    assert.ok(savedId);
    const cards = await payd.savedCards.list({ customer_reference: 'sdk-customer' });
    assert.deepEqual(cards.map((c) => [c.id, c.card.last_four_digits]), [[savedId, '4242']]);
    const mit = await payd.payments.create({ amount: 900, currency: 'EUR', customer: { reference: 'sdk-customer' },
      split: [{ partner: 'card-sim', method: 'CARD', amount: 900, instrument: { type: 'SAVED_CARD', saved_card_id: savedId, initiator: 'MERCHANT' } }] });
    assert.equal(mit.authorization.status, 'AUTHORIZED');
    assert.equal(mit.authorization.partner_transactions[0]!.saved_card_id, savedId);
    const before = proxy.seen.length;
    proxy.loseNext((req) => req.method === 'DELETE' && req.url === `/v2/saved-cards/${savedId}`);
    await payd.savedCards.delete(savedId);
    assert.deepEqual(proxy.seen.slice(before).filter((c) => c.method === 'DELETE').map((c) => c.status), [200, 409], 'deleted once; the retry is recognised by its key');
    assert.ok(await payd.savedCards.get(savedId).catch((e: unknown) => e) instanceof NotFoundError);
    assert.deepEqual(await payd.savedCards.list({ customer_reference: 'sdk-customer' }), []);
  });

  it('waits as Retry-After says on 503 and 429, then succeeds', async () => {
    proxy.answerNext((req) => req.url === '/v2/events?limit=1', 503, { 'content-type': 'application/problem+json', 'retry-after': '1' },
      JSON.stringify({ type: 'urn:eu.service:service-unavailable', title: 'Service unavailable', status: 503 }));
    proxy.answerNext((req) => req.url === '/v2/events?limit=1', 429, { 'content-type': 'application/problem+json', 'retry-after': '0' },
      JSON.stringify({ type: 'urn:eu.service:too-many-requests', title: 'Too many requests', status: 429 }));
    const started = Date.now();
    const page = await payd.events.list({ limit: 1 });
    assert.ok(Date.now() - started >= 950, `waited ${Date.now() - started} ms`);
    assert.equal(page.data.length, 1);
  });

  it('verifies webhook calls payd really sent, and refuses tampered, stale or unsigned ones', async () => {
    const secret = (await (await fetch(`${server.base}/admin/v1/entities/${entityId}/webhook-secret`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()).secret as string;
    const call = await waitFor(() => receiver.find((r) => JSON.parse(r.body).type === 'payment.captured'), { timeout: 30_000, every: 100 }).catch(() => undefined);
    assert.ok(call, 'payd delivered payment.captured');
    const event = await constructEvent(call.body, String(call.headers['payd-signature']), secret);
    assert.equal(event.type, 'payment.captured');
    assert.equal(event.entity_id, entityId);
    await assert.rejects(constructEvent(call.body.replace('"amount":', '"amount": '), String(call.headers['payd-signature']), secret), WebhookSignatureError);
    await assert.rejects(constructEvent(call.body, String(call.headers['payd-signature']), 'whsec_other'), WebhookSignatureError);
    await assert.rejects(constructEvent(call.body, undefined, secret), WebhookSignatureError);
    const old = signWebhook([secret], call.body, Math.floor(Date.now() / 1000) - 3600);
    await assert.rejects(constructEvent(call.body, old, secret), /too old/);
    // The SDK's signer and payd's agree.
    const t = Math.floor(Date.now() / 1000);
    assert.equal(await signPayload(call.body, secret, t), signWebhook([secret], call.body, t));
    assert.ok(await constructEvent(new TextEncoder().encode(call.body), signWebhook(['whsec_new', secret], call.body, t), secret));
  });
  it('webhookEndpoints: creates, lists, updates, rotates and deletes an endpoint, and receives its test event', async () => {
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/sdk-endpoint`;
    const created = await payd.webhookEndpoints.create({ url, enabled_events: ['payment.refunded'], description: 'SDK' });
    assert.match(created.secret, /^whsec_/);
    assert.equal(created.is_default, false);
    const listed = await payd.webhookEndpoints.list({ limit: 100 });
    assert.ok(listed.data.some((e) => e.id === created.id && e.url === url));
    const iterated: string[] = [];
    for await (const e of payd.webhookEndpoints.iterate({ limit: 1 })) iterated.push(e.id);
    assert.ok(iterated.includes(created.id));
    assert.equal((await payd.webhookEndpoints.get(created.id)).description, 'SDK');
    const updated = await payd.webhookEndpoints.update(created.id, { enabled_events: ['payment.captured', 'payment.refunded'] });
    assert.deepEqual(updated.enabled_events, ['payment.captured', 'payment.refunded']);
    const bad = await payd.webhookEndpoints.update(created.id, { enabled_events: ['payment.exploded'] }).catch((e: unknown) => e);
    assert.ok(bad instanceof InvalidRequestError, String(bad));
    const rotated = await payd.webhookEndpoints.rotateSecret(created.id, { previous_secret_valid_seconds: 0 });
    assert.equal(rotated.version, 2);
    const sent = await payd.webhookEndpoints.test(created.id);
    assert.equal(sent.type, 'webhook_endpoint.test');
    const arrived = () => receiver.find((r) => r.headers['payd-event-id'] === sent.id);
    const call = await poll(async () => arrived(), (c) => c !== undefined, { withinMs: 30_000 });
    assert.ok(call, 'the test event arrived');
    assert.equal(call.headers['payd-event-type'], 'webhook_endpoint.test');
    const event = await constructEvent(call.body, String(call.headers['payd-signature']), rotated.secret);
    assert.equal((event.data as { endpoint_id: string }).endpoint_id, created.id);
    // A test whose answer is lost sent one event: its retry carries the same key and is the 409 naming it.
    const testPath = `/v2/webhook-endpoints/${created.id}/test`;
    const before = proxy.seen.length;
    proxy.loseNext((req) => req.method === 'POST' && req.url === testPath);
    const lost = await payd.webhookEndpoints.test(created.id).catch((e: unknown) => e);
    assert.ok(lost instanceof IdempotencyError, String(lost));
    assert.equal(lost.sameRequest, true);
    const tests = proxy.seen.slice(before).filter((x) => x.method === 'POST' && x.url === testPath);
    assert.deepEqual(tests.map((x) => x.status), [202, 409]);
    assert.ok(tests[0]!.key && tests[0]!.key === tests[1]!.key, 'one key, kept across the retry');
    assert.notEqual(tests[0]!.key, proxy.seen.slice(0, before).filter((x) => x.url === testPath).at(-1)?.key, 'a fresh key per test');
    assert.equal(lost.resourceId, JSON.parse(tests[0]!.body).id, 'the event the lost call sent');
    assert.equal((await payd.events.get(lost.resourceId!)).type, 'webhook_endpoint.test');
    // events.resend: the same event again, to this endpoint (issue 43), with an idempotency key.
    const resent = await payd.events.resend(sent.id, { webhook_endpoint_id: created.id });
    assert.equal(resent.event_id, sent.id);
    assert.equal(resent.deliveries.length, 1);
    assert.equal(resent.deliveries[0]!.endpoint_id, created.id);
    const again = await poll(async () => receiver.find((r) => r.headers['payd-delivery-id'] === resent.deliveries[0]!.id), (c) => c !== undefined, { withinMs: 30_000 });
    assert.equal(again?.headers['payd-event-id'], sent.id);
    assert.ok(await payd.events.resend('00000000-0000-4000-8000-000000000000').catch((e: unknown) => e) instanceof NotFoundError);
    await payd.webhookEndpoints.delete(created.id);
    assert.ok(await payd.webhookEndpoints.get(created.id).catch((e: unknown) => e) instanceof NotFoundError);
  });

  it('manages the webhook endpoint: set (the secret once), get, rotate the secret, delete', async () => {
    const set = await payd.webhookEndpoint.set({ url: 'https://shop.example/payd-events', headers: [{ name: 'x-shop', values: ['k'] }] });
    assert.equal(set.url, 'https://shop.example/payd-events');
    const again = await payd.webhookEndpoint.set({ url: 'https://shop.example/payd-events-2' });
    assert.equal(again.secret, undefined, 'the secret is shown once');
    assert.equal((await payd.webhookEndpoint.get()).url, 'https://shop.example/payd-events-2');
    const before = proxy.seen.length;
    const rotated = await payd.webhookEndpoint.rotateSecret();
    assert.match(rotated.secret, /^whsec_/);
    // A rotation whose answer is lost rotated once; its secret cannot be shown again.
    proxy.loseNext((req) => req.method === 'POST' && req.url === '/v2/webhook-endpoint/secret/rotate');
    const lost = await payd.webhookEndpoint.rotateSecret().catch((e: unknown) => e);
    assert.ok(lost instanceof IdempotencyError, String(lost));
    assert.equal(lost.sameRequest, true);
    const rotations = proxy.seen.slice(before).filter((x) => x.method === 'POST' && x.url === '/v2/webhook-endpoint/secret/rotate');
    assert.ok(rotations.every((r) => r.key), 'rotations carry a key');
    assert.deepEqual(rotations.map((r) => r.status), [200, 200, 409]);
    assert.equal(JSON.parse(rotations[1]!.body).version, rotated.version + 1, 'the lost rotation happened once');
    const next = await payd.webhookEndpoint.rotateSecret();
    assert.equal(next.version, rotated.version + 2);
    await payd.webhookEndpoint.delete();
    const gone = await payd.webhookEndpoint.get().catch((e: unknown) => e);
    assert.ok(gone instanceof NotFoundError, String(gone));
  });
});
