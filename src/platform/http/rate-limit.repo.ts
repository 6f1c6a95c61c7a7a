// SQL of rate_limit_counters (rate-limit.ts: the counts every process adds at its sync).
import type { QueryResult, Queryable } from '../db/index.ts';

export interface CounterRow { scope: string; key: string; count: number; reset_ms: number }

const SYNC_SQL = `
INSERT INTO rate_limit_counters AS c (scope, key, count, reset_at)
SELECT s, k, n, to_timestamp(r / 1000.0) FROM unnest($1::text[], $2::text[], $3::bigint[], $4::float8[]) AS u(s, k, n, r)
ON CONFLICT (scope, key) DO UPDATE SET
  count = CASE WHEN c.reset_at <= to_timestamp($5::float8 / 1000.0) THEN excluded.count ELSE c.count + excluded.count END,
  reset_at = CASE WHEN c.reset_at <= to_timestamp($5::float8 / 1000.0) THEN excluded.reset_at ELSE c.reset_at END
RETURNING scope, key, count::float8 AS count, (extract(epoch FROM reset_at) * 1000)::float8 AS reset_ms`;

export const rateLimitRepo = {
  /**
   * Adds each key's count (a window ended by `now` ms starts afresh at its new reset time)
   * and returns every key's total with its window's end (ms since the epoch). One statement.
   */
  sync(q: Queryable, scopes: string[], keys: string[], counts: number[], resetAts: number[], now: number): Promise<QueryResult<CounterRow>> {
    return q.query<CounterRow>(SYNC_SQL, [scopes, keys, counts, resetAts, now]);
  },

  /** Deletes the counters whose window ended before `before` (ms since the epoch). */
  deleteEnded(q: Queryable, before: number): Promise<unknown> {
    return q.query('DELETE FROM rate_limit_counters WHERE reset_at < to_timestamp($1::float8 / 1000.0)', [before]);
  },
};
