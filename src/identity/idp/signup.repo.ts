// SQL of sign-up requests (signup.ts; idp_signup_requests): each stored by its token's
// SHA-256 (hex), a notice-only request (an address that has an account) holding no password.
import type { Queryable } from '../../platform/db/index.ts';

export interface NewSignupRequest {
  tokenHash: string;
  email: string;
  passwordHash: string;
  givenName: string | null;
  familyName: string | null;
  clientId: string;
  returnTo: string | null;
  noticeOnly: boolean;
  ttlSeconds: number;
}

export interface UsedSignupRequest { email: string; password_hash: string; given_name: string | null; family_name: string | null; return_to: string | null }

export const signupRepo = {
  /** Requests (links or notices) for this address in the last hour. */
  async recentCount(q: Queryable, email: string): Promise<number> {
    const { rows: [recent] } = await q.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM idp_signup_requests WHERE lower(email) = lower($1) AND created_at > now() - interval '1 hour'`, [email]);
    return recent!.n;
  },

  async insert(q: Queryable, r: NewSignupRequest): Promise<void> {
    await q.query(
      `INSERT INTO idp_signup_requests (token_hash, email, password_hash, given_name, family_name, client_id, return_to, notice_only, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))`,
      [r.tokenHash, r.email, r.passwordHash, r.givenName, r.familyName, r.clientId, r.returnTo, r.noticeOnly, r.ttlSeconds]);
  },

  /** Deletes the requests expired over an hour ago. */
  async deleteExpired(q: Queryable): Promise<void> {
    await q.query(`DELETE FROM idp_signup_requests WHERE expires_at < now() - interval '1 hour'`);
  },

  /** Whether the token's request is a real sign-up, unused and unexpired. */
  async isValid(q: Queryable, tokenHash: string): Promise<boolean> {
    const { rows } = await q.query(
      'SELECT 1 FROM idp_signup_requests WHERE token_hash = $1 AND NOT notice_only AND used_at IS NULL AND expires_at > now()', [tokenHash]);
    return rows.length > 0;
  },

  /** Uses the token's request once (a real sign-up, unused, unexpired): its row, else undefined. */
  async use(q: Queryable, tokenHash: string): Promise<UsedSignupRequest | undefined> {
    const { rows: [r] } = await q.query<UsedSignupRequest>(
      `UPDATE idp_signup_requests SET used_at = now() WHERE token_hash = $1 AND NOT notice_only AND used_at IS NULL AND expires_at > now()
          RETURNING email, password_hash, given_name, family_name, return_to`, [tokenHash]);
    return r;
  },

  /** Marks every unused request of the address used. */
  async useAllOf(q: Queryable, email: string): Promise<void> {
    await q.query('UPDATE idp_signup_requests SET used_at = now() WHERE lower(email) = lower($1) AND used_at IS NULL', [email]);
  },
};
