// The read router (platform/db/reads.ts) on scripted databases: when a read may go to
// the replica, and every way it falls back to the primary. The same router against a
// real streaming replica: test/faults/read-replica.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Db, QueryResult } from '../../src/platform/db/index.ts';
import { allowedLagMs, PROBE_MS, replicaReads, RETRY_MS } from '../../src/platform/db/reads.ts';
import { DatabaseUnavailableError } from '../../src/platform/db/errors.ts';
import { loadConfig } from '../../src/config.ts';

interface ReplicaState { standby: boolean; caught_up: boolean | null; age_ms: number | null }

/** A Db whose query answers from `answer`; counts its queries. */
function scripted(answer: (sql: string) => unknown[] | Error): Db & { queries: string[] } {
  const queries: string[] = [];
  const query = async <T>(sql: string): Promise<QueryResult<T>> => {
    queries.push(sql);
    const rows = answer(sql);
    if (rows instanceof Error) throw rows;
    return { rows: rows as T[], rowCount: rows.length };
  };
  return {
    kind: 'pg', queries, query, exec: async () => {},
    transaction: async () => { throw new Error('no transactions on a read path'); },
    withAdvisoryLock: async () => { throw new Error('no locks on a read path'); },
    onRow: async () => { throw new Error('no locks on a read path'); },
    listen: async () => async () => {},
    close: async () => {},
  } as Db & { queries: string[] };
}

function setup(state: () => ReplicaState | Error, opts: { defaultMaxLagMs?: number; primaryDown?: () => boolean } = {}) {
  let clock = 1_000_000;
  const primary = scripted((sql) => {
    if (opts.primaryDown?.()) return new DatabaseUnavailableError('connection refused');
    return sql.includes('pg_current_wal_lsn') ? [{ lsn: '0/3000000' }] : [{ from: 'primary' }];
  });
  const replica = scripted((sql) => {
    if (sql.includes('pg_is_in_recovery')) return state() instanceof Error ? state() as Error : [state()];
    return [{ from: 'replica' }];
  });
  const counts: Record<string, number> = {};
  const reads = replicaReads(primary, replica, {
    defaultMaxLagMs: opts.defaultMaxLagMs ?? 1000, now: () => clock,
    counter: { inc: ({ source, reason }) => { counts[`${source}/${reason}`] = (counts[`${source}/${reason}`] ?? 0) + 1; } },
  });
  const from = (maxLagMs: number) => reads.read(maxLagMs, async (q) => ((await q.query<{ from: string }>('SELECT x')).rows[0]!.from));
  return { reads, from, primary, replica, counts, advance: (ms: number) => { clock += ms; } };
}

describe('reads that allow staleness: the replica only when provably fresh enough', () => {
  it('a replica that has replayed the primary\'s position serves reads allowing more than the time since the probe', async () => {
    const s = setup(() => ({ standby: true, caught_up: true, age_ms: 60_000 }));
    assert.equal(await s.from(1000), 'replica', 'caught up: stale by at most the time since the probe, not by its last commit\'s age');
    s.advance(50);
    assert.equal(await s.from(1000), 'replica');
    assert.equal(await s.from(0), 'primary', 'no staleness allowed: the primary, without a probe');
    assert.equal(s.counts['replica/fresh'], 2);
    assert.equal(s.counts['primary/fresh_asked'], 1);
  });

  it('a replica behind the primary\'s position is as stale as its last replayed commit', async () => {
    let age = 400;
    const s = setup(() => ({ standby: true, caught_up: false, age_ms: age }));
    assert.equal(await s.from(1000), 'replica', '400 ms behind, 1 s allowed');
    assert.equal(await s.from(300), 'primary', '400 ms behind, 300 ms allowed');
    // Replay stops: 5 s later its last commit is 5.4 s old.
    s.advance(5000);
    age = 5400;
    assert.equal(await s.from(1000), 'primary', 'replay stopped 5 s ago');
    await new Promise((r) => setImmediate(r)); // the probe that read started (reads go on with the last one meanwhile)
    assert.equal(await s.from(1000), 'primary');
    assert.ok(s.counts['primary/lag']! >= 2);
    assert.equal(await s.from(10_000), 'replica', 'a read that allows 10 s still may');
  });

  it('the bound grows with time between probes: a read never gets data staler than it allows', async () => {
    const s = setup(() => ({ standby: true, caught_up: false, age_ms: 900 }));
    assert.equal(await s.from(1000), 'replica');
    s.advance(150); // no new probe yet (PROBE_MS): 900 + 150 ms now
    assert.equal(await s.from(1000), 'primary');
  });

  it('no replay yet (no commit replayed, not caught up), not a standby, or not answering: the primary serves, and a later probe may bring the replica back', async () => {
    let state: ReplicaState | Error = { standby: true, caught_up: false, age_ms: null };
    const s = setup(() => state);
    assert.equal(await s.from(60_000), 'primary', 'unknown staleness');
    state = { standby: false, caught_up: null, age_ms: null };
    s.advance(RETRY_MS);
    assert.equal(await s.from(60_000), 'primary', 'promoted or not a replica');
    state = new DatabaseUnavailableError('connection refused');
    s.advance(RETRY_MS);
    assert.equal(await s.from(60_000), 'primary', 'down');
    assert.equal(s.counts['primary/replica_unusable'], 3);
    state = { standby: true, caught_up: true, age_ms: 0 };
    s.advance(RETRY_MS - 1);
    assert.equal(await s.from(60_000), 'primary', 'no new probe before RETRY_MS');
    s.advance(1);
    assert.equal(await s.from(60_000), 'replica', 'back');
  });

  it('while the primary does not answer, the replica serves the reads that allow the age of its last replayed commit', async () => {
    let down = false;
    let caughtUp: boolean | null = true;
    const s = setup(() => ({ standby: true, caught_up: caughtUp, age_ms: 300 }), { primaryDown: () => down });
    assert.equal(await s.from(1000), 'replica');
    down = true;
    caughtUp = null; // (the position is unknown: NULL compares to nothing)
    s.advance(PROBE_MS);
    await s.reads.lagMs();
    await new Promise((r) => setImmediate(r));
    assert.equal(await s.from(5000), 'replica', 'the primary is down; 300 ms since the last replayed commit');
    s.advance(6000);
    await new Promise((r) => setImmediate(r));
    await assert.rejects(s.from(5000), DatabaseUnavailableError, 'staler than allowed: the primary, which is down');
  });

  it('not found on the replica (written after its horizon): asked again on the primary', async () => {
    const s = setup(() => ({ standby: true, caught_up: true, age_ms: 0 }));
    const seen: string[] = [];
    const found = await s.reads.read(1000, async (_q, source) => {
      seen.push(source);
      return source === 'primary' ? 'the payment' : undefined;
    });
    assert.equal(found, 'the payment');
    assert.deepEqual(seen, ['replica', 'primary']);
    assert.equal(s.counts['primary/not_on_replica'], 1);
  });

  it('a replica connection failing mid-read: the read is done on the primary, other errors are not hidden', async () => {
    const s = setup(() => ({ standby: true, caught_up: true, age_ms: 0 }));
    const got = await s.reads.read(1000, async (_q, source) => {
      if (source === 'replica') throw new DatabaseUnavailableError('connection terminated');
      return 'from the primary';
    });
    assert.equal(got, 'from the primary');
    assert.equal(s.counts['primary/replica_failed'], 1);
    assert.equal(await s.from(1000), 'primary', 'the replica is left alone until the next probe');
    await assert.rejects(s.reads.read(0, async () => { throw new TypeError('a bug'); }), TypeError);
  });

  it('probes at most every PROBE_MS, one at a time, however many reads come', async () => {
    const s = setup(() => ({ standby: true, caught_up: true, age_ms: 0 }));
    await Promise.all(Array.from({ length: 20 }, () => s.from(1000)));
    const probes = () => s.replica.queries.filter((q) => q.includes('pg_is_in_recovery')).length;
    assert.equal(probes(), 1);
    s.advance(PROBE_MS - 1);
    await s.from(1000);
    assert.equal(probes(), 1);
    s.advance(1);
    await s.from(1000);
    assert.equal(probes(), 2);
  });
});

describe('Cache-Control and the staleness a request allows', () => {
  it('max-age in seconds, no-cache and max-age=0 for the primary, the default otherwise', () => {
    assert.equal(allowedLagMs('max-age=5', 1000), 5000);
    assert.equal(allowedLagMs('no-store, max-age=2', 1000), 2000);
    assert.equal(allowedLagMs('max-age=0', 1000), 0);
    assert.equal(allowedLagMs('no-cache', 1000), 0);
    assert.equal(allowedLagMs('No-Cache, max-age=60', 1000), 0);
    assert.equal(allowedLagMs(undefined, 1000), 1000);
    assert.equal(allowedLagMs('private', 1000), 1000);
    assert.equal(allowedLagMs('max-age=abc', 1000), 1000);
  });
});

describe('DATABASE_READ_URL', () => {
  it('is one PostgreSQL host beside DATABASE_URL, and PAYD_READ_MAX_LAG_MS bounds the default staleness', () => {
    const c = loadConfig({ DATABASE_URL: 'postgres://u@db1/payd', DATABASE_READ_URL: 'postgres://u@replica/payd', PAYD_READ_MAX_LAG_MS: '250' });
    assert.equal(c.databaseReadUrl, 'postgres://u@replica/payd');
    assert.equal(c.readMaxLagMs, 250);
    assert.equal(loadConfig({}).databaseReadUrl, undefined);
    assert.throws(() => loadConfig({ DATABASE_READ_URL: 'postgres://u@replica/payd' }), /DATABASE_READ_URL needs DATABASE_URL/);
    assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://u@db1/payd', DATABASE_READ_URL: 'postgres://u@r1,r2/payd' }), /takes one host/);
    assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://u@db1/payd', DATABASE_READ_URL: 'mysql://u@r1/payd' }), /postgres:\/\//);
  });
});
