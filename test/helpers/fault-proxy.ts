// A TCP fault proxy for tests: listens on 127.0.0.1 and forwards every connection to a
// target (PostgreSQL, a partner, a webhook receiver), until told to misbehave.
//
//   const proxy = await startFaultProxy({ port: 5432 });      // target host defaults to 127.0.0.1
//   const url = proxy.rewrite('postgres://postgres@127.0.0.1:5432/db');  // same URL, via the proxy
//   await proxy.set('close');            // refuse new connections and drop the open ones
//   await proxy.set('pass');             // listen again on the same port, forward as before
//
// Faults (proxy.set):
//   'pass'                   forward both ways (the default)
//   'close'                  stop listening (connects are refused) and close every open
//                            connection (FIN to both sides): a database or host that went away
//   'blackhole'              accept connections but forward nothing, either way; open
//                            connections freeze. Like a network partition: nothing is lost, so
//                            on 'pass' the held bytes flow again (as TCP retransmission would)
//   { delayMs: n }           forward every chunk n ms late, in order
//   { resetAfterBytes: n }   let n more bytes flow from the target towards the client on each
//                            connection, then reset it (TCP RST to both sides): a reset in the
//                            middle of a response. 0 resets each connection on its next byte
// proxy.resetAll() resets every open connection now, whatever the fault.
// proxy.stats() counts connections: accepted in total and open now.
import net from 'node:net';

export type Fault = 'pass' | 'close' | 'blackhole' | { delayMs: number } | { resetAfterBytes: number };

export interface FaultProxy {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** The same URL with its host and port replaced by the proxy's. */
  rewrite(url: string): string;
  /** The fault now in force. */
  readonly fault: Fault;
  set(fault: Fault): Promise<void>;
  resetAll(): void;
  stats(): { accepted: number; open: number };
  close(): Promise<void>;
}

interface Pipe {
  client: net.Socket;
  upstream: net.Socket | undefined;
  /** Bytes still allowed towards the client before a reset (resetAfterBytes fault); -1 once the reset is under way. */
  budget: number;
  queues: { up: Chunk[]; down: Chunk[] };
  timers: { up?: NodeJS.Timeout; down?: NodeJS.Timeout };
  /** The side whose sender closed while a delay still held its bytes: drop once they are delivered. */
  closing?: 'up' | 'down';
}
interface Chunk { at: number; data: Buffer }

export async function startFaultProxy(target: { host?: string; port: number }, initial: Fault = 'pass'): Promise<FaultProxy> {
  const targetHost = target.host ?? '127.0.0.1';
  const pipes = new Set<Pipe>();
  let fault: Fault = 'pass';
  let accepted = 0;
  let port = 0;
  let closed = false;

  const server = net.createServer((client) => {
    accepted++;
    const pipe: Pipe = { client, upstream: undefined, budget: Infinity, queues: { up: [], down: [] }, timers: {} };
    pipes.add(pipe);
    if (typeof fault === 'object' && 'resetAfterBytes' in fault) pipe.budget = fault.resetAfterBytes;
    client.setNoDelay(true);
    client.on('error', () => {});
    client.on('close', () => dropAfterFlush(pipe, 'up'));
    client.on('data', (data) => forward(pipe, 'up', data));
    if (fault === 'blackhole') client.pause();
    else connectUpstream(pipe);
  });

  function connectUpstream(pipe: Pipe): void {
    if (pipe.upstream || pipe.client.destroyed) return;
    const upstream = net.connect({ host: targetHost, port: target.port });
    pipe.upstream = upstream;
    upstream.setNoDelay(true);
    upstream.on('error', () => {});
    upstream.on('close', () => dropAfterFlush(pipe, 'down'));
    upstream.on('data', (data) => forward(pipe, 'down', data));
    // Bytes the client sent while the connection was held are queued: send them now.
    flush(pipe, 'up');
  }

  function drop(pipe: Pipe, how: 'end' | 'reset' = 'end'): void {
    if (!pipes.delete(pipe)) return;
    clearTimeout(pipe.timers.up);
    clearTimeout(pipe.timers.down);
    for (const s of [pipe.client, pipe.upstream]) {
      if (!s || s.destroyed) continue;
      if (how === 'reset') s.resetAndDestroy();
      else s.destroy();
    }
  }

  /**
   * One side closed: bytes it sent that a delay still holds are delivered first (a slow
   * network delivers what was sent before the FIN), then the connection is dropped.
   */
  function dropAfterFlush(pipe: Pipe, dir: 'up' | 'down'): void {
    // A reset under way (resetAfterBytes) ends the connection itself: closing it gracefully
    // now would send the client a FIN instead of the RST the fault promises.
    if (pipe.budget < 0) return;
    if (pipe.queues[dir].length === 0 || fault === 'blackhole') drop(pipe);
    else pipe.closing = dir;
  }

  function forward(pipe: Pipe, dir: 'up' | 'down', data: Buffer): void {
    const delay = typeof fault === 'object' && 'delayMs' in fault ? fault.delayMs : 0;
    pipe.queues[dir].push({ at: Date.now() + delay, data });
    flush(pipe, dir);
  }

  function flush(pipe: Pipe, dir: 'up' | 'down'): void {
    const queue = pipe.queues[dir];
    const dst = dir === 'up' ? pipe.upstream : pipe.client;
    const src = dir === 'up' ? pipe.client : pipe.upstream;
    if (!dst || fault === 'blackhole' || pipe.timers[dir] || !pipes.has(pipe) || pipe.budget < 0) return;
    while (queue.length) {
      const chunk = queue[0]!;
      const wait = chunk.at - Date.now();
      if (wait > 0) {
        pipe.timers[dir] = setTimeout(() => {
          pipe.timers[dir] = undefined;
          flush(pipe, dir);
        }, wait);
        return;
      }
      queue.shift();
      if (dir === 'down' && chunk.data.length >= pipe.budget) {
        // The partial write reaches the socket first, then the reset.
        const reset = () => setTimeout(() => drop(pipe, 'reset'), 10);
        if (pipe.budget > 0) dst.write(chunk.data.subarray(0, pipe.budget), reset);
        else reset();
        pipe.budget = -1;
        queue.length = 0;
        return;
      }
      if (dir === 'down') pipe.budget -= chunk.data.length;
      if (!dst.write(chunk.data) && src && !src.isPaused()) {
        src.pause();
        dst.once('drain', () => {
          if (fault !== 'blackhole') src.resume();
        });
      }
    }
    if (pipe.closing === dir) dst.end(() => drop(pipe));
  }

  async function listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        port = (server.address() as net.AddressInfo).port;
        resolve();
      });
    });
  }

  async function set(next: Fault): Promise<void> {
    if (closed) throw new Error('the fault proxy is closed');
    const prev = fault;
    fault = next;
    if (next === 'close' && prev !== 'close') {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const pipe of [...pipes]) drop(pipe);
      });
      return;
    }
    if (prev === 'close' && next !== 'close') await listen();
    // A connection already being reset (budget < 0) stays so.
    const budget = typeof next === 'object' && 'resetAfterBytes' in next ? next.resetAfterBytes : Infinity;
    for (const pipe of pipes) if (pipe.budget >= 0) pipe.budget = budget;
    if (next === 'blackhole') {
      for (const pipe of pipes) {
        pipe.client.pause();
        pipe.upstream?.pause();
      }
    } else if (prev === 'blackhole') {
      for (const pipe of [...pipes]) {
        connectUpstream(pipe);
        pipe.client.resume();
        pipe.upstream?.resume();
        flush(pipe, 'up');
        flush(pipe, 'down');
      }
    }
  }

  await listen();
  await set(initial);

  return {
    host: '127.0.0.1',
    get port() {
      return port;
    },
    get fault() {
      return fault;
    },
    rewrite(url: string): string {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    set,
    resetAll() {
      for (const pipe of [...pipes]) drop(pipe, 'reset');
    },
    stats: () => ({ accepted, open: pipes.size }),
    async close() {
      if (closed) return;
      closed = true;
      for (const pipe of [...pipes]) drop(pipe);
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
