// The PostgreSQL adapter under faults, without a payd process: which failures count as
// "database unavailable", a transaction whose backend is terminated (no crash, the
// connection is discarded), and the LISTEN reconnect loop (one attempt at a time, with
// backoff, where it once doubled its attempts on every failure).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { DatabaseUnavailableError, isConnectionFailure, toDbError } from '../../src/platform/db/errors.ts';
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
      new Error('Connection terminated unexpectedly'), new Error('timeout exceeded when trying to connect'),
      new Error('Connection terminated due to connection timeout'), new Error('Query read timeout'),
      new Error('wrapped', { cause: withCode('ECONNREFUSED') }),
    ]) {
      assert.ok(isConnectionFailure(e), e.message);
      assert.ok(toDbError(e) instanceof DatabaseUnavailableError, e.message);
    }
    for (const e of [withCode('23505'), withCode('40001'), withCode('42601'), withCode('57014'), new Error('bad channel name'), undefined, 'text']) {
      assert.equal(isConnectionFailure(e), false, String(e));
      assert.equal(toDbError(e), e);
    }
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
