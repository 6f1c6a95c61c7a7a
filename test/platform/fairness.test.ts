// Fair connections and rates (issue 45, item 2), over real HTTP on the loopback network,
// where each client binds its own address (127.0.0.2, .3, ...):
// - one address that opens 1,000 idle connections, and opens them again as payd closes
//   them, holds at most PAYD_MAX_CONNECTIONS_PER_ADDRESS of them: every request from
//   another address is still answered, /healthz included;
// - the token endpoint (per credential and per address) and the payment API (per
//   credential) answer 429 problem+json with Retry-After and the RateLimit headers once a
//   limit is reached, while another credential (or address) is still served.
// No test waits for a clock: the windows are an hour long, and the counters that several
// processes share are synced by an explicit call.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { loadConfig } from '../../src/config.ts';
import { connectionAddress } from '../../src/platform/http/connection-cap.ts';

interface Answer { status: number; headers: http.IncomingHttpHeaders; body: string }

/** One request on its own connection from localAddress; rejects if the connection is closed without an answer. */
function send(port: number, localAddress: string, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, localAddress, method, path, agent: false, headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      res.on('error', reject);
    });
    req.setTimeout(20_000, () => req.destroy(new Error(`no answer to ${method} ${path} in 20 s`)));
    req.on('error', reject);
    req.end(body);
  });
}


describe('one address cannot take every connection', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    // The default global cap (1,000); headers timeout long enough that the idle sockets
    // stay for the whole test (as they would against the defaults, re-opened every 10 s).
    t = await createTestApp({ maxConnections: 1000, maxConnectionsPerAddress: 100, headersTimeoutMs: 120_000, requestTimeoutMs: 120_000 });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
  });
  after(() => t.close());

  it('has a default below the global cap, configurable (0: off)', () => {
    const d = loadConfig({});
    assert.equal(d.maxConnectionsPerAddress, 500);
    assert.ok(d.maxConnectionsPerAddress < d.maxConnections);
    assert.equal(loadConfig({ PAYD_MAX_CONNECTIONS_PER_ADDRESS: '0' }).maxConnectionsPerAddress, 0);
    assert.throws(() => loadConfig({ PAYD_MAX_CONNECTIONS_PER_ADDRESS: '-1' }), /PAYD_MAX_CONNECTIONS_PER_ADDRESS must be an integer/);
  });

  it('counts an address as the socket shows it: IPv4, IPv4-mapped as IPv4, IPv6 by its /64', () => {
    assert.equal(connectionAddress('127.0.0.2'), '127.0.0.2');
    assert.equal(connectionAddress('::ffff:10.1.2.3'), '10.1.2.3');
    assert.equal(connectionAddress('2001:db8:0:1:aaaa::1'), '2001:db8:0:1::/64');
    assert.equal(connectionAddress('2001:db8:0:1:bbbb:1:2:3'), '2001:db8:0:1::/64');
    assert.equal(connectionAddress('2001:db8::5'), '2001:db8:0:0::/64');
    assert.equal(connectionAddress('::1'), '0:0:0:0::/64');
  });

  it('serves other addresses, /healthz included, while 1,000 idle sockets from 127.0.0.2 are re-opened as they close', async () => {
    const held = new Set<net.Socket>();
    let reopened = 0;
    let stop = false;
    const open = () => new Promise<void>((resolve) => {
      const s = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
      s.on('error', () => {});
      s.once('connect', () => { held.add(s); resolve(); });
      s.once('close', () => {
        held.delete(s);
        resolve();
        // The attacker opens it again (once per socket and test, so that the test stays cheap).
        if (!stop && reopened < 1000) {
          reopened++;
          setTimeout(() => { if (!stop) void open(); }, 20);
        }
      });
    });
    try {
      for (let i = 0; i < 1000; i += 100) await Promise.all(Array.from({ length: 100 }, open));
      // Let the server see (and refuse) them all.
      for (let i = 0; i < 200 && t.app.server.listenerCount('connection') > 0; i++) {
        const count = await new Promise<number>((r) => t.app.server.getConnections((_e, n) => r(n)));
        if (count <= 100 + 5) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      const answers = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => send(port, '127.0.0.3', 'GET', i % 2 ? '/healthz' : '/readyz')));
      const failed = answers.filter((a) => a.status === 'rejected' || a.value.status !== 200);
      assert.equal(failed.length, 0, `requests from 127.0.0.3 not answered 200: ${failed.length} of 100, e.g. ${String((failed[0] as PromiseRejectedResult | undefined)?.reason ?? '')}`);
      const count = await new Promise<number>((r) => t.app.server.getConnections((_e, n) => r(n)));
      assert.ok(count <= 100 + 100, `open connections: ${count}`);
    } finally {
      stop = true;
      for (const s of held) s.destroy();
    }
  });
});
