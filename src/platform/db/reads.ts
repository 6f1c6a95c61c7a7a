// Reads that may be a little stale, from a streaming replica (DATABASE_READ_URL) when it
// is known to be fresh enough, else from the primary. Only reads that the API documents
// as possibly stale come here (GET of a payment or an operation with Cache-Control
// max-age, the lists, the events, the dashboard's pages); every decision about money
// (operations, idempotency, sessions, sign-ins) reads the primary under its locks.
//
// How fresh the replica is, as a bound on its staleness (not an estimate): a probe reads
// the primary's WAL position at local time t0, then asks the replica whether it has
// replayed up to it (pg_last_wal_replay_lsn) and how old its last replayed commit is
// (pg_last_xact_replay_timestamp). A replica that replayed the primary's position holds
// everything committed before t0; one that did not holds at least everything committed
// before its last replayed commit. Staleness at the time of a read is then at most
// now - anchor, with the anchor the later of the two. The replay timestamp alone would
// call an idle but current replica stale, hence the position; while the primary does not
// answer, the replay timestamp alone (reads that allow that much go on during an outage). Probes run at most every
// PROBE_MS, one at a time, and only while reads ask for the replica.
import type { Db, Queryable } from './db.ts';
import { isConnectionFailure } from './errors.ts';

export const PROBE_MS = 200;
/** After a failed probe (replica down or not a standby), the primary serves reads this long before the next probe. */
export const RETRY_MS = 1000;

export type ReadSource = 'primary' | 'replica';

export interface ReadsLog {
  warn(obj: object, msg: string): void;
}

export interface ReadRouter {
  /** Whether a replica is configured. */
  readonly enabled: boolean;
  /** The default staleness allowed for reads that carry none (ms). */
  readonly defaultMaxLagMs: number;
  /**
   * Runs fn on the replica when its staleness is within maxLagMs, else on the primary.
   * An answer of undefined from the replica (not found there: written after its horizon)
   * or a connection failure of the replica is tried again on the primary.
   */
  read<T>(maxLagMs: number, fn: (q: Queryable, source: ReadSource) => Promise<T | undefined>): Promise<T | undefined>;
  /** The staleness bound now (ms), or undefined when the replica is not usable (for metrics and tests). */
  lagMs(): Promise<number | undefined>;
  close(): Promise<void>;
}

export interface ReadCounters {
  inc(labels: { source: ReadSource; reason: string }): void;
}

/** Reads always from the primary: no replica configured (and always with PGlite). */
export function primaryReads(primary: Db, defaultMaxLagMs = 0): ReadRouter {
  return {
    enabled: false,
    defaultMaxLagMs,
    read: (_max, fn) => fn(primary, 'primary'),
    lagMs: async () => undefined,
    close: async () => {},
  };
}

export function replicaReads(primary: Db, replica: Db, opts: { defaultMaxLagMs: number; log?: ReadsLog; counter?: ReadCounters; now?: () => number }): ReadRouter {
  const now = opts.now ?? Date.now;
  let anchor: number | undefined; // local time before which every commit is on the replica
  let probedAt = -Infinity;
  let usable = false;
  let probing: Promise<void> | undefined;
  let warnedAt = -Infinity;

  const warn = (obj: object, msg: string) => {
    if (now() - warnedAt < 60_000) return;
    warnedAt = now();
    opts.log?.warn(obj, msg);
  };

  async function probe(): Promise<void> {
    const t0 = now();
    try {
      // The primary's position; while the primary is down, the replica's last replayed
      // commit alone bounds its staleness (and it may serve reads that allow that much).
      const lsn = await primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')
        .then((res) => res.rows[0]!.lsn, () => null);
      const t1 = now();
      const { rows: [r] } = await replica.query<{ standby: boolean; caught_up: boolean | null; age_ms: number | null }>(
        `SELECT pg_is_in_recovery() AS standby,
                pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught_up,
                (EXTRACT(EPOCH FROM (now() - pg_last_xact_replay_timestamp())) * 1000)::float8 AS age_ms`,
        [lsn],
      );
      if (!r!.standby) {
        // Promoted, or not a replica at all: it may not follow the primary payd writes to.
        usable = false;
        warn({ replica: 'not in recovery' }, 'DATABASE_READ_URL is not a standby: reads go to the primary');
        return;
      }
      const byPosition = r!.caught_up ? t0 : -Infinity;
      const byCommit = r!.age_ms !== null ? t1 - Math.max(0, r!.age_ms) : -Infinity;
      anchor = Math.max(byPosition, byCommit);
      usable = Number.isFinite(anchor);
    } catch (err) {
      usable = false;
      warn({ err: (err as Error).message }, 'the read replica did not answer its lag probe: reads go to the primary');
    } finally {
      probedAt = now();
    }
  }

  async function currentLag(): Promise<number | undefined> {
    const due = now() - probedAt >= (usable ? PROBE_MS : RETRY_MS);
    if (due) {
      probing ??= probe().finally(() => { probing = undefined; });
      // Wait for a probe only when nothing usable is known; otherwise go on with the last one.
      if (!usable || anchor === undefined) await probing;
    }
    return usable && anchor !== undefined ? Math.max(0, now() - anchor) : undefined;
  }

  return {
    enabled: true,
    defaultMaxLagMs: opts.defaultMaxLagMs,
    lagMs: currentLag,
    async read(maxLagMs, fn) {
      if (maxLagMs > 0) {
        const lag = await currentLag();
        if (lag !== undefined && lag <= maxLagMs) {
          try {
            const found = await fn(replica, 'replica');
            if (found !== undefined) {
              opts.counter?.inc({ source: 'replica', reason: 'fresh' });
              return found;
            }
            opts.counter?.inc({ source: 'primary', reason: 'not_on_replica' });
          } catch (err) {
            if (!isConnectionFailure(err)) throw err;
            usable = false;
            probedAt = now();
            opts.counter?.inc({ source: 'primary', reason: 'replica_failed' });
          }
          return fn(primary, 'primary');
        }
        opts.counter?.inc({ source: 'primary', reason: lag === undefined ? 'replica_unusable' : 'lag' });
      } else {
        opts.counter?.inc({ source: 'primary', reason: 'fresh_asked' });
      }
      return fn(primary, 'primary');
    },
    close: () => replica.close(),
  };
}

/**
 * The staleness a request allows: Cache-Control max-age=<s> (in ms), 0 for no-cache or
 * max-age=0, else `fallback` (undefined when the header says nothing).
 */
export function allowedLagMs(cacheControl: string | undefined, fallback: number): number {
  const header = cacheControl ?? '';
  if (/(^|,)\s*no-cache\s*(,|$)/i.test(header)) return 0;
  const m = /(^|,)\s*max-age\s*=\s*(\d+)\s*(,|$)/i.exec(header);
  if (m) return Math.min(Number(m[2]), 86_400 * 365) * 1000;
  return fallback;
}
