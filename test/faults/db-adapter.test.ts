// The PostgreSQL adapter under faults, without a payd process: which failures count as
// "database unavailable", a transaction whose backend is terminated (no crash, the
// connection is discarded), and the LISTEN reconnect loop (one attempt at a time, with
// backoff, where it once doubled its attempts on every failure).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import pg from 'pg';
import { DatabaseBusyError, DatabaseUnavailableError, isConnectionFailure, toDbError } from '../../src/platform/db/errors.ts';
import { backoffMs, createPgDb } from '../../src/platform/db/pg.ts';
import type { Db } from '../../src/platform/db/index.ts';
import type { TestDb } from '../helpers/db.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { createPgTestDb, sleep } from './db-fixture.ts';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('connection failure classification', () => {
  it('connection-level failures are unavailable; statement errors are not', () => {
    for (const e of [
      withCode('ECONNREFUSED'), withCode('ECONNRESET'), withCode('57P01'), withCode('57P03'), withCode('53300'), withCode('53100'), withCode('53200'), withCode('08006'),
      // PostgreSQL's statement_timeout (or the cancel sent when the client gave up), and a
      // session ended for idling in its transaction (issue 45): 503, the connection discarded.
      withCode('57014'), withCode('25P03'),
      new Error('Connection terminated unexpectedly'), new Error('timeout exceeded when trying to connect'),
      new Error('Connection terminated due to connection timeout'), new Error('Query read timeout'),
      new Error('wrapped', { cause: withCode('ECONNREFUSED') }),
    ]) {
      assert.ok(isConnectionFailure(e), e.message);
      assert.ok(toDbError(e) instanceof DatabaseUnavailableError, e.message);
    }
    for (const e of [withCode('23505'), withCode('40001'), withCode('42601'), new Error('bad channel name'), undefined, 'text']) {
      assert.equal(isConnectionFailure(e), false, String(e));
      assert.equal(toDbError(e), e);
    }
    // A lock wait past lock_timeout: busy (409), not unavailable.
    assert.equal(isConnectionFailure(withCode('55P03')), false);
    assert.ok(toDbError(withCode('55P03')) instanceof DatabaseBusyError);
    assert.equal(new DatabaseUnavailableError(withCode('57P01')).code, '57P01');
  });

  it('backoff grows, is capped and jittered', () => {
    for (let attempt = 0; attempt < 30; attempt++) {
      const ceiling = Math.min(5000, 250 * 2 ** attempt);
      const d = backoffMs(attempt);
      assert.ok(d >= ceiling / 2 - 1 && d <= ceiling + 1, `attempt ${attempt}: ${d}`);
    }
  });
});

describe('pg adapter through the fault proxy', () => {
  let t: TestDb & { url: string; name: string };
  let proxy: FaultProxy;
  let db: Db;
  before(async () => {
    t = await createPgTestDb();
    const u = new URL(t.url);
    proxy = await startFaultProxy({ host: u.hostname, port: Number(u.port || 5432) });
    db = createPgDb(proxy.rewrite(t.url), 4);
  });
  after(async () => {
    await db?.close();
    await proxy?.close();
    await t?.close();
  });

  it('a transaction whose backend is terminated rejects unavailable; the pool serves on', async () => {
    const killer = new pg.Client({ connectionString: t.url });
    await killer.connect();
    try {
      for (let round = 0; round < 5; round++) {
        const tx = db.transaction(async (q) => {
          await q.query('SELECT 1');
          // Terminated here, between two statements of the transaction.
          await killer.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND state = 'idle in transaction'`, [t.name]);
          await sleep(20);
          await q.query('SELECT 2');
        });
        await assert.rejects(tx, DatabaseUnavailableError);
        assert.equal((await db.query<{ n: number }>('SELECT 3 AS n')).rows[0]!.n, 3);
      }
    } finally {
      await killer.end();
    }
  });

  it('a refused database is unavailable at once, a reset one too, then it serves again', async () => {
    await proxy.set('close');
    // The pool's idle connections were dropped: a query may meet one before the pool has
    // noticed; the next ones open connections and are refused.
    const codes: (string | undefined)[] = [];
    for (let i = 0; i < 6; i++) {
      await assert.rejects(db.query('SELECT 1'), (e: unknown) => e instanceof DatabaseUnavailableError && (codes.push(e.code), true));
    }
    assert.ok(codes.includes('ECONNREFUSED'), JSON.stringify(codes));
    await proxy.set({ resetAfterBytes: 0 });
    await assert.rejects(db.query('SELECT 1'), DatabaseUnavailableError);
    await proxy.set('pass');
    assert.equal((await db.query<{ n: number }>('SELECT 4 AS n')).rows[0]!.n, 4);
  });

  it('a statement held by the network, or slow on the server, gives up after its limit as unavailable; the next one serves', async () => {
    const LIMIT_MS = 400;
    const quick = createPgDb(proxy.rewrite(t.url), 2, { statementTimeoutMs: LIMIT_MS });
    try {
      assert.equal((await quick.query<{ n: number }>('SELECT $1::int AS n', [1])).rows[0]!.n, 1); // a pooled connection
      await proxy.set('blackhole');
      let started = Date.now();
      await assert.rejects(quick.query('SELECT $1::int AS n', [2]), DatabaseUnavailableError);
      let took = Date.now() - started;
      assert.ok(took >= LIMIT_MS && took < LIMIT_MS + 1500, `gave up after ${took} ms`);
      await proxy.set('pass');
      // In a transaction too, and for a statement the server is slow to answer.
      started = Date.now();
      await assert.rejects(quick.transaction((q) => q.query('SELECT pg_sleep(3)')), DatabaseUnavailableError);
      took = Date.now() - started;
      assert.ok(took >= LIMIT_MS && took < LIMIT_MS + 1500, `gave up after ${took} ms`);
      // The connections that gave up were discarded; the pool serves on new ones.
      for (let i = 0; i < 4; i++) assert.equal((await quick.query<{ n: number }>('SELECT $1::int AS n', [i])).rows[0]!.n, i);
    } finally {
      await proxy.set('pass');
      await quick.close();
    }
  });

  it('LISTEN reconnects in one loop with backoff, reports the loss, and hears notifications again', async () => {
    const heard: string[] = [];
    let lost = 0;
    const stop = await db.listen('fault_test', (p) => heard.push(p), () => lost++);
    /** Notifies until heard (a pooled connection left over by the previous faults may fail first). */
    const notifyUntilHeard = async (payload: string) => {
      for (let i = 0; !heard.includes(payload); i++) {
        assert.ok(i < 200, `${payload} was never heard`);
        await db.query(`SELECT pg_notify('fault_test', $1)`, [payload]).catch((e: unknown) => {
          if (!(e instanceof DatabaseUnavailableError)) throw e;
        });
        await sleep(50);
      }
    };
    try {
      await notifyUntilHeard('one');
      // Every connection is accepted and then reset when the server first answers: each
      // attempt shows in the proxy's count. 3 s of it: about 5 attempts with the backoff
      // (0.25 + 0.5 + 1 + 2 s), where the old code doubled them on every failure.
      const before = proxy.stats().accepted;
      await proxy.set({ resetAfterBytes: 0 });
      proxy.resetAll();
      await sleep(3000);
      const attempts = proxy.stats().accepted - before;
      assert.ok(lost >= 1, 'the loss was reported');
      assert.ok(attempts >= 2 && attempts <= 8, `${attempts} connection attempts in 3 s`);
      await proxy.set('pass');
      // Back: a notification sent now is heard (once the loop has reconnected).
      await notifyUntilHeard('two');
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN fault_test'`);
      assert.equal(rows[0]!.n, 1, 'one LISTEN connection');
    } finally {
      await stop();
    }
  });
});

/**
 * A fake PostgreSQL server that accepts any login and answers every simple query with one
 * row (transaction_read_only = off: payd's check that a host takes writes). Its first
 * `broken` connections send, in the same TCP write as their first answer, a FATAL error: a
 * backend terminated just as it answered. The FATAL then arrives in the network read that
 * completes the statement, before pg-pool listens on the new client.
 */
async function fatalAfterFirstAnswer(broken = Number.POSITIVE_INFINITY): Promise<{ port: number; close: () => Promise<void> }> {
  const msg = (type: string, body: Buffer) => {
    const head = Buffer.alloc(5);
    head.write(type, 0, 'latin1');
    head.writeInt32BE(body.length + 4, 1);
    return Buffer.concat([head, body]);
  };
  const cstr = (s: string) => Buffer.from(`${s}\0`, 'latin1');
  const int16 = (n: number) => { const b = Buffer.alloc(2); b.writeInt16BE(n); return b; };
  const int32 = (n: number) => { const b = Buffer.alloc(4); b.writeInt32BE(n); return b; };
  const ready = msg('Z', Buffer.from('I'));
  const column = Buffer.concat([cstr('transaction_read_only'), int32(0), int16(0), int32(25), int16(-1), int32(-1), int16(0)]);
  const answer = Buffer.concat([
    msg('T', Buffer.concat([int16(1), column])),
    msg('D', Buffer.concat([int16(1), int32(3), Buffer.from('off')])),
    msg('C', cstr('SELECT 1')),
    ready,
  ]);
  const fatal = msg('E', Buffer.concat([cstr('SFATAL'), cstr('VFATAL'), cstr('C57P01'), cstr('Mterminating connection due to administrator command'), Buffer.from([0])]));
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((socket) => {
    const dies = connections++ < broken;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buf = Buffer.alloc(0);
    let started = false;
    socket.on('data', (data) => {
      buf = Buffer.concat([buf, data]);
      if (!started) {
        if (buf.length < 4 || buf.length < buf.readInt32BE(0)) return;
        buf = buf.subarray(buf.readInt32BE(0));
        started = true;
        socket.write(Buffer.concat([msg('R', int32(0)), ready])); // AuthenticationOk, ReadyForQuery
      }
      while (buf.length >= 5 && buf.length >= 1 + buf.readInt32BE(1)) {
        const type = buf.toString('latin1', 0, 1);
        buf = buf.subarray(1 + buf.readInt32BE(1));
        if (type !== 'Q') continue; // (Terminate)
        if (!dies) {
          socket.write(answer);
          continue;
        }
        socket.write(Buffer.concat([answer, fatal]));
        socket.end();
        return;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

describe('pg adapter: an error nobody awaits', () => {
  it('a FATAL that arrives with the answer to a new connection\'s check does not kill the process; the caller gets unavailable', async () => {
    const fake = await fatalAfterFirstAnswer();
    // Two hosts: payd checks each new connection (SHOW transaction_read_only) before use.
    const db = createPgDb(`postgres://payd@127.0.0.1:${fake.port},127.0.0.1:${fake.port}/fake`, 2);
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      await assert.rejects(db.query('SELECT 1'), DatabaseUnavailableError);
      await sleep(50);
      assert.deepEqual(uncaught, [], 'no error escaped to the process');
    } finally {
      process.off('uncaughtException', onUncaught);
      await db.close().catch(() => {});
      await fake.close();
    }
  });

  it('a client that heard such an error before it was handed over is discarded, and the statement goes to another', async () => {
    const fake = await fatalAfterFirstAnswer(1);
    const db = createPgDb(`postgres://payd@127.0.0.1:${fake.port},127.0.0.1:${fake.port}/fake`, 2);
    try {
      const { rows } = await db.query<{ transaction_read_only: string }>('SELECT 1');
      assert.deepEqual(rows, [{ transaction_read_only: 'off' }], 'answered by the second connection');
    } finally {
      await db.close().catch(() => {});
      await fake.close();
    }
  });
});
