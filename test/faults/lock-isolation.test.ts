// Issue 45, item 1: one payment whose row lock is held (by another PostgreSQL session, or
// by a second payd process frozen with SIGSTOP in the middle of its transaction) while 20
// clients capture it must not stall anybody else: another merchant reading and capturing
// its own payment every 1.5 s gets 200 in under 2 s throughout, the busy payment's
// clients get 200 or 409 resource-busy (problem+json, Retry-After) within a bound, payd's
// backends stay within its pool (pg_stat_activity), the frozen process's transaction is
// ended by PostgreSQL (idle_in_transaction_session_timeout) and rolls back, and the money
// invariants hold. A second case: a statement the client gives up on (its time limit) is
// cancelled on the server, so waiting backends do not pile up.
//
// PostgreSQL is needed (PGlite has one connection and no row lock to wait for): like the
// other fault scenarios it creates its own database on DATABASE_URL's server, or on the
// local one, in both passes. PAYD_LOCK_HOLD_MS (default 6000) sets how long the lock is
// held in the first phase; PAYD_FAULT_SEED the clients' amounts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { createPgDb } from '../../src/platform/db/pg.ts';
import { DatabaseUnavailableError } from '../../src/platform/db/errors.ts';
import type { TestDb } from '../helpers/db.ts';
import { freePort, httpClient, onboardMerchant, type PaydProcess, startPayd, stopAll } from '../helpers/processes.ts';
import { moneyInvariants, storedTotalsDiffering } from '../helpers/invariants.ts';
import { createPgTestDb, envInt, paymentBody, seeded, sleep } from './db-fixture.ts';

const HOLD_MS = envInt('PAYD_LOCK_HOLD_MS', 6000);
const SEED = envInt('PAYD_FAULT_SEED', Date.now() % 1_000_000_000);
const CLIENTS = 20;
const POOL = 10;
/** payd's lock wait (PAYD_DB_LOCK_TIMEOUT_MS, its default) and the frozen session's limit. */
const LOCK_TIMEOUT_MS = 2000;
const IDLE_IN_TX_MS = 4000;

interface Timed { status: number; ms: number; type?: string | undefined; retryAfter?: string | null; contentType?: string | null; error?: string }

/** A process's state letter from /proc (T: stopped). */
const procState = (pid: number) => /\)\s+(\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];

describe(`lock isolation: one locked payment under ${CLIENTS} clients (seed ${SEED})`, () => {
  let t: TestDb & { url: string; name: string };
  let a: PaydProcess;
  let b: PaydProcess;
  let admin: pg.Client;
  const urlAs = (name: string) => `${t.url}${t.url.includes('?') ? '&' : '?'}application_name=${name}`;

  before(async () => {
    t = await createPgTestDb();
    admin = new pg.Client({ connectionString: t.url });
    await admin.connect();
    const env = { PAYD_DB_POOL_SIZE: String(POOL), PAYD_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: String(IDLE_IN_TX_MS), PAYD_RECOVERY_INTERVAL_MS: '60000', PAYD_MAX_OPERATIONS_PER_PAYMENT: '10000' };
    // One token issuer for both: b's base URL is a's.
    const port = String(await freePort());
    [a, b] = await Promise.all([
      startPayd({ ...env, PORT: port, DATABASE_URL: urlAs('payd_a') }),
      // b stops itself (SIGSTOP) inside a capture's transaction, holding the payment's row lock.
      startPayd({ ...env, PAYD_BASE_URL: `http://127.0.0.1:${port}`, DATABASE_URL: urlAs('payd_b'), PAYD_FAULT_KILL_AT: 'capture:under-lock', PAYD_FAULT_SIGNAL: 'SIGSTOP' }),
    ]);
  });
  after(async () => {
    if (b && b.child.exitCode === null) b.child.kill('SIGCONT');
    await stopAll();
    await admin?.end();
    await t?.close();
  });

  it('another merchant is served in under 2 s, the busy payment answers 200 or 409 + Retry-After, backends stay within the pool', async (ctx) => {
    ctx.diagnostic(`PAYD_FAULT_SEED=${SEED} PAYD_LOCK_HOLD_MS=${HOLD_MS}`);
    const random = seeded(SEED);
    const call = httpClient(60_000);
    const [m1, m2] = [await onboardMerchant(a.base, { name: 'busy' }), await onboardMerchant(a.base, { name: 'other' })];
    const create = async (auth: Record<string, string>) => {
      const r = await call(a.base, 'POST', '/v2/payments', auth, { ...paymentBody(1_000_000), capture_mode: 'MANUAL' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body!.id as string;
    };
    const busy = await create(m1.auth);
    const other = await create(m2.auth);

    const timed = async (base: string, method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<Timed> => {
      const started = Date.now();
      try {
        const r = await call(base, method, url, headers, body);
        return { status: r.status, ms: Date.now() - started, type: r.body?.type, retryAfter: r.headers.get('retry-after'), contentType: r.headers.get('content-type') };
      } catch (err) {
        return { status: 0, ms: Date.now() - started, error: String(err) };
      }
    };
    const busyAnswers: Timed[] = [];
    const otherAnswers: Timed[] = [];
    let peakBackends = 0;
    const tally = (xs: Timed[]) => xs.reduce<Record<number, number>>((m, x) => ((m[x.status] = (m[x.status] ?? 0) + 1), m), {});
    const slowest = (xs: Timed[]) => xs.reduce((m, x) => Math.max(m, x.ms), 0);

    /** The load, while `hold` runs: 20 clients capturing the busy payment, the other merchant every 1.5 s, backends sampled. */
    const underLoad = async (hold: () => Promise<void>) => {
      let stop = false;
      const clients = Array.from({ length: CLIENTS }, async () => {
        while (!stop) {
          const r = await timed(a.base, 'POST', `/v2/payments/${busy}/captures`, m1.auth, { amount: 1 + Math.floor(random() * 5) });
          busyAnswers.push(r);
          if (r.status !== 200) await sleep(50);
        }
      });
      const otherLoop = (async () => {
        while (!stop) {
          const next = Date.now() + 1500;
          otherAnswers.push(await timed(a.base, 'GET', `/v2/payments/${other}`, m2.auth));
          otherAnswers.push(await timed(a.base, 'POST', `/v2/payments/${other}/captures`, m2.auth, { amount: 1 }));
          await sleep(Math.max(0, next - Date.now()));
        }
      })();
      const sampler = (async () => {
        while (!stop) {
          const { rows } = await admin.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'payd_a' AND query NOT LIKE 'LISTEN %'`, [t.name]);
          peakBackends = Math.max(peakBackends, rows[0]!.n);
          await sleep(200);
        }
      })();
      try {
        await hold();
      } finally {
        stop = true;
        await Promise.all([...clients, otherLoop, sampler]);
      }
    };

    // Phase 1: another session holds the busy payment's row lock.
    const phase1From = busyAnswers.length;
    await underLoad(async () => {
      await admin.query('BEGIN');
      await admin.query('SELECT id FROM payments WHERE id = $1 FOR UPDATE', [busy]);
      await sleep(HOLD_MS);
      await admin.query('ROLLBACK');
      await sleep(1500); // captures go through again
    });
    const phase1 = busyAnswers.slice(phase1From);
    ctx.diagnostic(`phase 1: busy payment ${JSON.stringify(tally(phase1))}, slowest ${slowest(phase1)} ms; other merchant ${JSON.stringify(tally(otherAnswers))}, slowest ${slowest(otherAnswers)} ms; peak backends ${peakBackends}`);
    assert.ok(phase1.some((r) => r.status === 409), 'some captures of the locked payment were refused busy');
    assert.ok(phase1.slice(-CLIENTS).some((r) => r.status === 200), 'captures went through once the lock was released');

    // Phase 2: process b stops itself inside a capture's transaction, holding the row lock
    // until PostgreSQL ends its idle transaction. A replayed operation key takes the locked
    // path (the operation is found under the row lock); the key's record in idempotency_keys
    // is removed first, as for a key used before migration 0044, so that the replay reaches
    // the payment instead of being answered by the key table.
    const key = `first-${SEED}`;
    const first = await call(a.base, 'POST', `/v2/payments/${busy}/captures`, { ...m1.auth, 'x-idempotency-key': key }, { amount: 10 });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    await admin.query('DELETE FROM idempotency_keys WHERE key = $1', [key]);
    const replay = timed(b.base, 'POST', `/v2/payments/${busy}/captures`, { ...m1.auth, 'x-idempotency-key': key }, { amount: 10 });
    const phase2From = busyAnswers.length;
    let frozenFor = 0;
    await underLoad(async () => {
      const started = Date.now();
      while (procState(b.child.pid!) !== 'T') {
        assert.ok(Date.now() - started < 10_000, `b stopped itself under the lock (the replay answered ${JSON.stringify(await Promise.race([replay, sleep(10).then(() => 'nothing')]))}; b: ${b.output()})`);
        await sleep(20);
      }
      // PostgreSQL ends b's session once idle in its transaction for IDLE_IN_TX_MS.
      for (;;) {
        const { rows } = await admin.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'payd_b' AND state = 'idle in transaction'`, [t.name]);
        if (rows[0]!.n === 0) break;
        assert.ok(Date.now() - started < IDLE_IN_TX_MS + 10_000, 'PostgreSQL ended the frozen transaction');
        await sleep(100);
      }
      frozenFor = Date.now() - started;
      await sleep(1500);
    });
    const phase2 = busyAnswers.slice(phase2From);
    b.child.kill('SIGCONT');
    const replayed = await replay;
    // b's transaction was ended under it: rolled back, answered 503 (retry with the key).
    assert.equal(replayed.status, 503, JSON.stringify(replayed));
    assert.equal((await call(b.base, 'GET', '/readyz')).status, 200, 'b serves again');
    assert.ok(phase2.some((r) => r.status === 409), 'captures were refused busy while b held the lock');
    assert.ok(phase2.slice(-CLIENTS).some((r) => r.status === 200), 'captures went through once PostgreSQL ended b\'s transaction');

    ctx.diagnostic(`busy payment: ${busyAnswers.length} answers ${JSON.stringify(tally(busyAnswers))}, slowest ${slowest(busyAnswers)} ms; ` +
      `other merchant: ${otherAnswers.length} answers ${JSON.stringify(tally(otherAnswers))}, slowest ${slowest(otherAnswers)} ms; ` +
      `peak backends ${peakBackends}; b frozen under the lock ${frozenFor} ms`);

    // The other merchant: every answer 200 in under 2 s.
    assert.ok(otherAnswers.length >= 8, `${otherAnswers.length} answers to the other merchant`);
    for (const r of otherAnswers) {
      assert.equal(r.status, 200, JSON.stringify(r));
      assert.ok(r.ms < 2000, `the other merchant waited ${r.ms} ms`);
    }
    // The busy payment: 200, or 409 resource-busy as problem+json with Retry-After, in bounded time.
    for (const r of busyAnswers) {
      assert.ok(r.status === 200 || r.status === 409, JSON.stringify(r));
      if (r.status === 409) {
        assert.equal(r.type, 'urn:eu.service:resource-busy', JSON.stringify(r));
        assert.match(r.contentType ?? '', /^application\/problem\+json/);
        assert.match(r.retryAfter ?? '', /^\d+$/);
      }
      // Bounded well below the hold (not 20 s of waiting); the margin is for a loaded CI
      // machine (6.4 s was seen with the full suite beside other work). The other merchant's
      // 2 s bound above is the property under test.
      assert.ok(r.ms < LOCK_TIMEOUT_MS + 8000, `a capture of the busy payment took ${r.ms} ms`);
    }
    assert.ok(peakBackends <= POOL, `payd a had ${peakBackends} backends (pool ${POOL})`);

    // Money: nothing over-captured, the ledger and the stored totals agree, nothing PENDING.
    const report = await moneyInvariants(t.db);
    assert.deepEqual(report.violations, []);
    assert.equal(report.pending, 0);
    assert.deepEqual(await storedTotalsDiffering(t.db), []);
    const acknowledged = busyAnswers.filter((r) => r.status === 200).length;
    const { rows } = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM payment_operations WHERE payment_id = $1 AND kind = 'CAPTURE' AND status = 'SUCCESS'`, [busy]);
    assert.equal(rows[0]!.n, acknowledged + 1, 'every acknowledged capture is in the ledger, and no other (the frozen one rolled back)');
  });

  it('a statement the client gives up on is cancelled on the server: waiting backends do not pile up', async () => {
    const LIMIT_MS = 300;
    const name = `payd_cancel_${process.pid}`;
    // The session's own limits are lifted (SET LOCAL) so that only the client's limit acts.
    const db = createPgDb(urlAs(name), 2, { statementTimeoutMs: LIMIT_MS });
    const waiting = async () => (await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 AND wait_event_type = 'Lock'`, [t.name, name])).rows[0]!.n;
    const backends = async () => (await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = $2`, [t.name, name])).rows[0]!.n;
    try {
      const { rows: [row] } = await admin.query<{ id: string }>('SELECT id FROM payments LIMIT 1');
      await admin.query('BEGIN');
      await admin.query('SELECT id FROM payments WHERE id = $1 FOR UPDATE', [row!.id]);
      for (let round = 0; round < 4; round++) {
        await assert.rejects(db.transaction(async (q) => {
          await q.query('SET LOCAL statement_timeout = 0');
          await q.query('SET LOCAL lock_timeout = 0');
          await q.query('SELECT id FROM payments WHERE id = $1 FOR UPDATE', [row!.id]);
        }), DatabaseUnavailableError);
        // The statement was cancelled: no backend of this pool waits for the lock any more.
        const deadline = Date.now() + 3000;
        while ((await waiting()) > 0) {
          assert.ok(Date.now() < deadline, `round ${round}: a backend still waits for the lock after the client gave up`);
          await sleep(50);
        }
      }
      // Gone too, not just idle: at most the pool's connections.
      const deadline = Date.now() + 3000;
      while ((await backends()) > 2) {
        assert.ok(Date.now() < deadline, `${await backends()} backends for a pool of 2`);
        await sleep(50);
      }
      assert.equal((await db.query<{ n: number }>('SELECT 1 AS n')).rows[0]!.n, 1, 'the pool serves on');
    } finally {
      await admin.query('ROLLBACK');
      await db.close();
    }
  });
});
