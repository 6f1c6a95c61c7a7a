// SQL of the sign-in throttle (throttle.ts; idp_login_failures): an attempt recorded, the
// failures counted around it, an attempt (or an address's failures for an account) deleted.
import type { Queryable } from '../../platform/db/index.ts';

/** Failures since a time: of this (account, address), of this address, of this account; each with its latest. */
export interface FailureCounts {
  pair: number; pair_last: Date | null;
  ip: number; ip_last: Date | null;
  account: number; account_last: Date | null;
}

export const throttleRepo = {
  /** Records an attempt (as a failure until it succeeds): its id. */
  async insert(q: Queryable, email: string, ip: string, at: Date): Promise<string> {
    const { rows: [row] } = await q.query<{ id: string }>(
      'INSERT INTO idp_login_failures (email, ip, created_at) VALUES ($1, $2, $3) RETURNING id::text', [email, ip, at]);
    return row!.id;
  },

  /** The failures since `since` of the account, the address and both, the attempt `exceptId` left out. */
  async counts(q: Queryable, email: string, ip: string, since: Date, exceptId: string): Promise<FailureCounts> {
    const { rows: [c] } = await q.query<FailureCounts>(
      `SELECT count(*) FILTER (WHERE lower(email) = lower($1) AND ip = $2)::int AS pair, max(created_at) FILTER (WHERE lower(email) = lower($1) AND ip = $2) AS pair_last,
              count(*) FILTER (WHERE ip = $2)::int AS ip, max(created_at) FILTER (WHERE ip = $2) AS ip_last,
              count(*) FILTER (WHERE lower(email) = lower($1))::int AS account, max(created_at) FILTER (WHERE lower(email) = lower($1)) AS account_last
         FROM idp_login_failures
        WHERE (lower(email) = lower($1) OR ip = $2) AND created_at > $3 AND id <> $4::bigint`,
      [email, ip, since, exceptId]);
    return c!;
  },

  /** Deletes the attempt and the address's earlier failures for the account. */
  async deleteWithPair(q: Queryable, id: string, email: string, ip: string): Promise<void> {
    await q.query('DELETE FROM idp_login_failures WHERE id = $1::bigint OR (lower(email) = lower($2) AND ip = $3)', [id, email, ip]);
  },

  async delete(q: Queryable, id: string): Promise<void> {
    await q.query('DELETE FROM idp_login_failures WHERE id = $1::bigint', [id]);
  },
};
