// Declared statuses are the ones payd produces (issue 15, item 6). The spec: "Error
// responses of payment operations use application/problem+json, status codes 400, 403,
// 404, 409, 429, 500, 503, 504 as listed per endpoint", and "Which condition yields 403,
// 503 or 504: not shown". payd's reading (docs/decisions.md, "Statuses declared"):
// 503 on every operation (database unreachable, or the process stopping), with
// Retry-After; 504 on none, since no payment operation waits on a partner whose answer
// could be "nothing happened"; 429 exactly on the operations under a request-rate limit
// (issue 45: the token endpoint and the operations a merchant's credential calls).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { waitFor } from '../helpers/wait.ts';

describe('declared statuses', () => {
  let t: TestApp;
  // A stop that takes a while before the server closes its listener and idle connections
  // (another plugin's preClose work): the window in which a request can still arrive.
  let releaseStop: () => void = () => {};
  const stopHeld = new Promise<void>((resolve) => { releaseStop = resolve; });
  // Resolved when this hook runs: payd's own preClose hook (registered before it) has run.
  let stopBegun: () => void = () => {};
  const begun = new Promise<void>((resolve) => { stopBegun = resolve; });
  before(async () => {
    t = await createTestApp({}, { beforeReady: (app) => { app.addHook('preClose', () => { stopBegun(); return stopHeld; }); } });
  });
  after(async () => {
    releaseStop();
    await t.close().catch(() => {});
  });

  it('the OpenAPI document declares 500 and 503 on every operation, 504 on none, 429 on the rate-limited ones', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const wrong: string[] = [];
    let operations = 0;
    const limited: string[] = [];
    for (const [path, ops] of Object.entries<Record<string, { responses?: Record<string, unknown>; security?: Array<Record<string, unknown>> }>>(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        operations++;
        const key = `${method.toUpperCase()} ${path}`;
        const codes = Object.keys(op.responses ?? {});
        for (const must of ['500', '503']) if (!codes.includes(must)) wrong.push(`${key} lacks ${must}`);
        if (codes.includes('504')) wrong.push(`${key} declares 504`);
        const merchant = key === 'POST /oauth/token' || (op.security ?? []).some((s) => 'bearerAuth' in s || 'apiKey' in s);
        if (merchant !== codes.includes('429')) wrong.push(`${key} ${merchant ? 'lacks' : 'declares'} 429`);
        if (merchant) limited.push(key);
      }
    }
    assert.ok(operations > 40, `${operations} operations`);
    assert.ok(limited.includes('POST /oauth/token') && limited.includes('POST /v2/payments') && limited.includes('GET /v2/events'), limited.join(', '));
    assert.ok(!limited.some((k) => k.includes('/admin/')), limited.join(', '));
    assert.deepEqual(wrong, []);
    const unavailable = doc.paths['/v2/payments'].post.responses['503'];
    assert.ok(unavailable.content['application/problem+json'], 'a 503 is a problem');
  });

  it('a request that arrives while the process stops is answered 503 problem+json with Retry-After', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const socket = net.connect(Number(new URL(address).port), '127.0.0.1');
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => { raw += chunk; });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const answer = async () => {
      await waitFor(() => /\r\n\r\n/.test(raw) && raw.length >= raw.indexOf('\r\n\r\n') + 4 + Number(/content-length: (\d+)/i.exec(raw)?.[1] ?? 0),
        { every: 5, what: 'a whole answer' });
      const got = raw;
      raw = '';
      return got;
    };
    socket.write('GET /healthz HTTP/1.1\r\nHost: payd.test\r\n\r\n');
    assert.match(await answer(), /^HTTP\/1\.1 200 /);
    const closing = t.app.close();
    await begun; // the stop has begun
    socket.write(`GET /v2/payments/${crypto.randomUUID()} HTTP/1.1\r\nHost: payd.test\r\nAuthorization: Bearer x\r\n\r\n`);
    const second = await answer();
    releaseStop();
    await closing;
    socket.destroy();
    assert.match(second, /^HTTP\/1\.1 503 /, second);
    assert.match(second, /\r\ncontent-type: application\/problem\+json/i);
    assert.match(second, /\r\nretry-after: 1\r\n/i);
    assert.match(second, /\r\nconnection: close\r\n/i);
    const body = JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4));
    assert.equal(body.status, 503);
    assert.equal(body.type, 'urn:eu.service:service-unavailable');
    assert.match(body.detail, /shutting down/);
  });
});
