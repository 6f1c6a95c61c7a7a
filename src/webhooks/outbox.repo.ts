// SQL of the transactional outbox (outbox.ts): the event and its first delivery, written
// as CTEs of the caller's statement (money.repo.ts) or as a statement of their own
// (enqueueEvent), and the fan-out of an event to its destinations (events.repo.ts reads
// it too). The texts are built once per shape; no await of their own (the money path).
import type { QueryResult, Queryable } from '../platform/db/index.ts';

/**
 * The destinations of the event row `e` (a lateral subquery): its own url (endpoint_id null),
 * else every enabled endpoint of its entity whose enabled_events hold its type or "*",
 * the default endpoint first; n numbers them from 1.
 */
export const fanOutSql = (e: string) => `SELECT NULL::uuid AS endpoint_id, 1::bigint AS n WHERE ${e}.url IS NOT NULL
    UNION ALL
    SELECT ep.id, row_number() OVER (ORDER BY ep.is_default DESC, ep.created_at, ep.id) AS n
      FROM webhook_endpoints ep
     WHERE ${e}.url IS NULL AND ep.entity_id = ${e}.entity_id AND ep.status = 'enabled'
       AND (ep.enabled_events @> '["*"]'::jsonb OR ep.enabled_events @> jsonb_build_array(${e}.type))`;

/** The text of eventCtes, built once per (first parameter, gate): the same for every event. */
const ctesSql = new Map<string, string>();

/**
 * The event and its first delivery as two CTEs (`ev`, `evd`), written only when the CTE
 * or table named by `gate` yields a row; the parameters (outbox.ts, eventCtes) numbered
 * from `first`: id, entity, type, data, url, headers, first delivery's id, sealed
 * headers, subject, traceparent.
 */
export function eventCtesSql(first: number, gate: string): string {
  const key = `${first}|${gate}`;
  let sql = ctesSql.get(key);
  if (sql !== undefined) return sql;
  const n = (i: number) => `$${first + i}`;
  sql = `ev AS (
       INSERT INTO webhook_events (id, entity_id, type, data, url, headers, headers_enc, subject_id, traceparent, created_at)
       SELECT ${n(0)}::uuid, ${n(1)}::uuid, ${n(2)}::text, ${n(3)}::json, ${n(4)}::text, ${n(5)}::jsonb, ${n(7)}::text, ${n(8)}::uuid, ${n(9)}::text, clock_timestamp()
         FROM ${gate} LIMIT 1
       RETURNING id, entity_id, type, url, created_at
     ), evd AS (
       INSERT INTO webhook_deliveries (id, event_id, entity_id, endpoint_id, reason, next_attempt_at, created_at, updated_at)
       SELECT CASE WHEN t.n = 1 THEN ${n(6)}::uuid ELSE gen_random_uuid() END, ev.id, ev.entity_id, t.endpoint_id, 'EVENT',
              ev.created_at, ev.created_at, ev.created_at
         FROM ev, LATERAL (${fanOutSql('ev')}) t
       RETURNING id
     )`;
  if (ctesSql.size < 100) ctesSql.set(key, sql);
  return sql;
}

/** An event written by a statement of its own: the gate always yields its one row. */
const ALONE_SQL = `WITH ${eventCtesSql(1, '(SELECT 1) AS gate')} SELECT ev.id, (SELECT id FROM evd WHERE id = $7::uuid) AS delivery_id FROM ev`;

export const outboxRepo = {
  /**
   * The event and its first delivery in one INSERT statement (parameters from $1, as
   * eventCtes gives them): the event's id, and the first delivery's (null: no destination).
   */
  insertEvent(q: Queryable, params: unknown[]): Promise<QueryResult<{ id: string; delivery_id: string | null }>> {
    return q.query<{ id: string; delivery_id: string | null }>(ALONE_SQL, params);
  },
};
