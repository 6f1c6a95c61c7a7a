// The fault proxy's own behaviour, against a small TCP echo server: pass, close (refused,
// open connections dropped), blackhole (held, then delivered), delay (in order), reset in
// the middle of a stream.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';

/** A client that records everything it receives and how the connection ended. */
function connect(port: number) {
  const socket = net.connect({ host: '127.0.0.1', port });
  let received = '';
  const ended = new Promise<string>((resolve) => {
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    socket.on('close', () => resolve('closed'));
  });
  socket.on('data', (d) => (received += d.toString()));
  const opened = new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return {
    socket, opened, ended,
    get received() { return received; },
    async waitFor(text: string) {
      while (!received.includes(text)) {
        if (socket.destroyed) throw new Error(`connection ended before "${text}" (got "${received}")`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
  };
}

describe('fault proxy', () => {
  let echo: net.Server;
  let proxy: FaultProxy;
  before(async () => {
    // Echoes every chunk; "big" asks for 64 KiB of "x" followed by "END".
    echo = net.createServer((s) => {
      s.on('error', () => {});
      s.on('data', (d) => s.write(d.toString() === 'big' ? 'x'.repeat(65536) + 'END' : d));
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    proxy = await startFaultProxy({ port: (echo.address() as net.AddressInfo).port });
  });
  after(async () => {
    await proxy.close();
    await new Promise((r) => echo.close(r));
  });

  it('pass forwards both ways and rewrites URLs to itself', async () => {
    const c = connect(proxy.port);
    await c.opened;
    c.socket.write('hello');
    await c.waitFor('hello');
    c.socket.destroy();
    assert.equal(proxy.rewrite('postgres://u@db.example:5432/x?ssl=0'), `postgres://u@127.0.0.1:${proxy.port}/x?ssl=0`);
  });

  it('close drops open connections and refuses new ones; pass listens again on the same port', async () => {
    const c = connect(proxy.port);
    await c.opened;
    await proxy.set('close');
    assert.equal(await c.ended, 'closed');
    const refused = connect(proxy.port);
    await assert.rejects(refused.opened, { code: 'ECONNREFUSED' });
    await proxy.set('pass');
    const again = connect(proxy.port);
    await again.opened;
    again.socket.write('back');
    await again.waitFor('back');
    again.socket.destroy();
  });

  it('blackhole accepts but forwards nothing; on pass the held bytes are delivered', async () => {
    const open = connect(proxy.port);
    await open.opened;
    await proxy.set('blackhole');
    const fresh = connect(proxy.port);
    await fresh.opened;
    open.socket.write('one');
    fresh.socket.write('two');
    // Nothing comes back while the hole lasts: prove it with a round trip that does pass
    // through another route (a direct connection to the echo server).
    const direct = connect((echo.address() as net.AddressInfo).port);
    await direct.opened;
    direct.socket.write('ping');
    await direct.waitFor('ping');
    direct.socket.destroy();
    assert.equal(open.received, '');
    assert.equal(fresh.received, '');
    await proxy.set('pass');
    await open.waitFor('one');
    await fresh.waitFor('two');
    open.socket.destroy();
    fresh.socket.destroy();
  });

  it('delay keeps the order of chunks', async () => {
    await proxy.set({ delayMs: 50 });
    const c = connect(proxy.port);
    await c.opened;
    for (let i = 0; i < 20; i++) c.socket.write(`<${i}>`);
    await c.waitFor('<19>');
    assert.equal(c.received, Array.from({ length: 20 }, (_, i) => `<${i}>`).join(''));
    c.socket.destroy();
    await proxy.set('pass');
  });

  it('resetAfterBytes resets a connection in the middle of a response', async () => {
    await proxy.set({ resetAfterBytes: 1000 });
    const c = connect(proxy.port);
    await c.opened;
    c.socket.write('big');
    assert.equal(await c.ended, 'ECONNRESET');
    assert.ok(c.received.length <= 1000 && !c.received.includes('END'), `received ${c.received.length} bytes`);
    await proxy.set('pass');
    const whole = connect(proxy.port);
    await whole.opened;
    whole.socket.write('big');
    await whole.waitFor('END');
    whole.socket.destroy();
  });

  it('resetAll resets every open connection; stats count them', async () => {
    const a = connect(proxy.port);
    const b = connect(proxy.port);
    await Promise.all([a.opened, b.opened]);
    a.socket.write('a');
    await a.waitFor('a');
    b.socket.write('b');
    await b.waitFor('b');
    assert.equal(proxy.stats().open, 2);
    proxy.resetAll();
    assert.equal(await a.ended, 'ECONNRESET');
    assert.equal(await b.ended, 'ECONNRESET');
    assert.equal(proxy.stats().open, 0);
    assert.ok(proxy.stats().accepted >= 2);
  });
});
