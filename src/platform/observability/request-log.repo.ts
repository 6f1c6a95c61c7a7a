// SQL of the request log (migration 0047): batched inserts, the dashboard's page of an
// entity's calls (newest first, by keyset), and the retention delete.
import type { Queryable } from '../db/index.ts';

export interface RequestLogEntry {
  entity_id: string;
  /** When the request arrived (ISO 8601, milliseconds). */
  created_at: string;
  method: string;
  /** The route's template (/v2/payments/:id/captures), never the URL with its ids and query. */
  route: string;
  status: number;
  duration_ms: number;
  request_id: string;
  idempotency_key: string | null;
  api_key_id: string | null;
}

export interface RequestLogRow extends RequestLogEntry { id: string }

export const requestLogRepo = {
  /** One statement for the whole batch. */
  async insert(q: Queryable, rows: RequestLogEntry[]): Promise<void> {
    if (rows.length === 0) return;
    await q.query(
      `INSERT INTO api_request_log (entity_id, created_at, method, route, status, duration_ms, request_id, idempotency_key, api_key_id)
       SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::smallint[], $6::int[], $7::text[], $8::text[], $9::uuid[])`,
      [rows.map((r) => r.entity_id), rows.map((r) => r.created_at), rows.map((r) => r.method), rows.map((r) => r.route), rows.map((r) => r.status),
        rows.map((r) => r.duration_ms), rows.map((r) => r.request_id), rows.map((r) => r.idempotency_key), rows.map((r) => r.api_key_id)]);
  },

  /**
   * The entity's calls newest first, limit + 1 rows (the extra one says there are older
   * ones), after the cursor (created_at and id of the last row shown) when given.
   */
  async page(q: Queryable, entityId: string, opts: { limit: number; before?: { at: string; id: string } | undefined; errorsOnly?: boolean }): Promise<RequestLogRow[]> {
    const params: unknown[] = [entityId];
    const where = ['entity_id = $1'];
    if (opts.before) {
      params.push(opts.before.at, opts.before.id);
      where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::bigint)`);
    }
    if (opts.errorsOnly) where.push('status >= 400');
    const { rows } = await q.query<RequestLogRow>(
      `SELECT id::text, entity_id::text, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, method, route,
              status::int AS status, duration_ms, request_id, idempotency_key, api_key_id::text
         FROM api_request_log WHERE ${where.join(' AND ')}
        ORDER BY created_at DESC, id DESC LIMIT ${opts.limit + 1}`, params);
    return rows;
  },

  /** Removes the calls older than `before`; returns how many. */
  async deleteOlderThan(q: Queryable, before: Date): Promise<number> {
    const { rowCount } = await q.query('DELETE FROM api_request_log WHERE created_at < $1', [before]);
    return rowCount;
  },
};
