// The dashboard home page's figures: a merchant's payments by day (in its time zone) and
// currency since a moment, authorised (count and volume) and refused.
import type { Queryable } from '../platform/db/index.ts';

export interface DayFigures { day: string; currency: string; authorized: number; volume: string; refused: number }

export const homeRepo = {
  async daysSince(q: Queryable, entityId: string, zone: string, since: Date): Promise<DayFigures[]> {
    const { rows } = await q.query<DayFigures>(
      `SELECT to_char(created_at AT TIME ZONE $2, 'YYYY-MM-DD') AS day, currency,
              count(*) FILTER (WHERE authorization_status = 'AUTHORIZED')::int AS authorized,
              coalesce(sum(amount) FILTER (WHERE authorization_status = 'AUTHORIZED'), 0)::text AS volume,
              count(*) FILTER (WHERE authorization_status IN ('REFUSED', 'ERROR'))::int AS refused
         FROM payments WHERE entity_id = $1 AND created_at >= $3
        GROUP BY 1, 2`, [entityId, zone, since]);
    return rows;
  },
};
