// Slow and idle clients over real HTTP: a trickled body, headers that never end, an idle
// new connection and an idle keep-alive connection are all closed by the server; past
// PAYD_MAX_CONNECTIONS new connections are refused while the open ones are still served.
// Small timeouts here; the assertions wait for the state (closed) with generous bounds.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { loadConfig } from '../../src/config.ts';
import { poll, waitFor } from '../helpers/wait.ts';

const BOUND_MS = 15_000; // far above the configured timeouts, far below "never"

interface Conn {
  socket: net.Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves when the server has closed the connection (or rejects after BOUND_MS). */
  closed: Promise<void>;
  isClosed(): boolean;
}

function connect(port: number): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    let done = false;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => { data += chunk; });
    socket.on('error', () => { /* a reset counts as closed */ });
    const closed = new Promise<void>((res, rej) => {
      // Bounds the wait for the close, not a sleep.
      const timer = setTimeout(() => rej(new Error(`the server did not close the connection within ${BOUND_MS} ms; received: ${JSON.stringify(data.slice(0, 200))}`)), BOUND_MS);
      socket.on('close', () => { done = true; clearTimeout(timer); res(); });
    });
    closed.catch(() => {});
    socket.once('connect', () => resolve({ socket, received: () => data, closed, isClosed: () => done }));
    socket.once('error', reject);
  });
}

/** Sends one complete request on a keep-alive connection and waits for its whole response. */
async function request(c: Conn, path = '/healthz'): Promise<string> {
  const before = c.received().length;
  c.socket.write(`GET ${path} HTTP/1.1\r\nHost: payd.test\r\nConnection: keep-alive\r\n\r\n`);
  return waitFor(() => {
    const text = c.received().slice(before);
    const m = /\r\ncontent-length: (\d+)\r\n/i.exec(text);
    const end = text.indexOf('\r\n\r\n');
    if (m && end >= 0 && text.length >= end + 4 + Number(m[1])) return text;
    if (c.isClosed()) throw new Error(`connection closed before a full response: ${JSON.stringify(text)}`);
    return undefined;
  }, { timeout: BOUND_MS, every: 10, what: 'a full response' });
}

describe('request and connection timeouts', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    // Headers and request timeouts well above the event-loop lag of a loaded 2-core machine
    // (at 300 ms, a held connection's first request was once answered 408 under load).
    t = await createTestApp({ requestTimeoutMs: 3000, headersTimeoutMs: 1500, keepAliveTimeoutMs: 300, maxConnections: 5 }, {
      beforeReady: (app) => {
        app.post('/test/echo', async (req) => req.body);
      },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
  });
  after(() => t.close());

  it('has sane defaults, configurable from the environment', () => {
    const d = loadConfig({});
    assert.equal(d.requestTimeoutMs, 30000);
    assert.equal(d.headersTimeoutMs, 10000);
    assert.equal(d.keepAliveTimeoutMs, 72000);
    assert.equal(d.maxConnections, 1000);
    const c = loadConfig({ PAYD_REQUEST_TIMEOUT_MS: '5000', PAYD_HEADERS_TIMEOUT_MS: '2000', PAYD_KEEP_ALIVE_TIMEOUT_MS: '1000', PAYD_MAX_CONNECTIONS: '10' });
    assert.deepEqual([c.requestTimeoutMs, c.headersTimeoutMs, c.keepAliveTimeoutMs, c.maxConnections], [5000, 2000, 1000, 10]);
    assert.throws(() => loadConfig({ PAYD_REQUEST_TIMEOUT_MS: '1000', PAYD_HEADERS_TIMEOUT_MS: '2000' }), /PAYD_HEADERS_TIMEOUT_MS must not be longer than PAYD_REQUEST_TIMEOUT_MS/);
    assert.throws(() => loadConfig({ PAYD_MAX_CONNECTIONS: '0' }), /PAYD_MAX_CONNECTIONS must be an integer/);
  });

  for (const path of ['/test/echo', '/oauth/token', '/v2/payments']) {
    it(`cuts a body that trickles in (complete headers, Content-Length: 100000) on ${path}`, async () => {
      const c = await connect(port);
      const type = path === '/oauth/token' ? 'application/x-www-form-urlencoded' : 'application/json';
      c.socket.write(`POST ${path} HTTP/1.1\r\nHost: payd.test\r\nContent-Type: ${type}\r\nContent-Length: 100000\r\n\r\n`);
      const drip = setInterval(() => { if (!c.isClosed()) c.socket.write('a'); }, 50);
      try {
        await c.closed;
      } finally {
        clearInterval(drip);
      }
      const got = c.received();
      // Either the server answered before closing (408 for the timeout, or an error the
      // route gives before reading the body), or it closed without an answer.
      if (got) assert.match(got, /^HTTP\/1\.1 (408|4\d\d) /);
      if (got && path === '/test/echo') assert.match(got, /^HTTP\/1\.1 408 /);
    });
  }

  it('closes a connection that sends nothing, and one whose headers never end', async () => {
    const idle = await connect(port);
    const slow = await connect(port);
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: payd.test\r\n');
    const drip = setInterval(() => { if (!slow.isClosed()) slow.socket.write('X-Slow: 1\r\n'); }, 50);
    try {
      await Promise.all([idle.closed, slow.closed]);
    } finally {
      clearInterval(drip);
    }
    assert.equal(idle.received().replace(/^HTTP\/1\.1 408 [^]*$/, ''), '', 'nothing but a 408 on the idle connection');
  });

  it('closes an idle keep-alive connection after its response', async () => {
    const c = await connect(port);
    assert.match(await request(c), /^HTTP\/1\.1 200 /);
    assert.match(await request(c), /^HTTP\/1\.1 200 /, 'the connection is reused while it is busy');
    await c.closed;
  });

  it('refuses connections above the cap and keeps serving the open ones', async () => {
    // Each held connection keeps making requests, so that keep-alive does not close it.
    const held: Conn[] = [];
    let stop = false;
    const loops: Promise<void>[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const c = await connect(port);
        held.push(c);
        assert.match(await request(c), /^HTTP\/1\.1 200 /);
        loops.push((async () => {
          while (!stop && !c.isClosed()) {
            assert.match(await request(c), /^HTTP\/1\.1 200 /);
            await new Promise((r) => setTimeout(r, 30)); // pacing of the held connection's traffic, not a wait for anything
          }
        })().catch(() => {}));
      }
      const extra = await connect(port);
      extra.socket.write('GET /healthz HTTP/1.1\r\nHost: payd.test\r\n\r\n');
      await extra.closed;
      assert.equal(extra.received(), '', 'the connection above the cap gets no answer');
      for (const c of held) assert.equal(c.isClosed(), false, 'the open connections are still served');
      // One held connection goes away: a new one is served again.
      held[0]!.socket.destroy();
      await held[0]!.closed;
      // Tried on new connections until one is served (the server sees the close on its own time).
      const served = await poll(async () => {
        const c = await connect(port);
        try {
          return /^HTTP\/1\.1 200 /.test(await request(c));
        } catch {
          return false;
        } finally {
          c.socket.destroy();
        }
      }, (ok) => ok, { everyMs: 50 });
      assert.ok(served, 'a new connection is served once there is room');
    } finally {
      stop = true;
      for (const c of held) c.socket.destroy();
      await Promise.all(loops);
    }
  });
});
