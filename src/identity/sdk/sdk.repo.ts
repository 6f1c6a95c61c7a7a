// Storage of the identity SDK's contract (migration 0026): one-time authentication tokens
// (tkn), password reset tokens and the mail outbox. Tokens are stored as SHA-256 hashes;
// each is used once, by one row update that checks expiry and use together.
import type { Queryable } from '../../platform/db/index.ts';

export interface LoginTokenRow {
  client_id: string;
  user_id: string;
  auth_type: 'password' | 'signup';
  auth_time: Date;
}

export interface MailRow {
  id: string;
  to_address: string;
  subject: string;
  body: string;
  created_at: Date;
  transport: 'outbox' | 'smtp';
  sent_at: Date | null;
  error: string | null;
}

export const sdkRepo = {
  async insertLoginToken(q: Queryable, t: { token_hash: string; client_id: string; user_id: string; auth_type: 'password' | 'signup'; ttlSeconds: number }): Promise<void> {
    await q.query(
      `INSERT INTO idp_login_tokens (token_hash, client_id, user_id, auth_type, auth_time, expires_at)
       VALUES ($1, $2, $3, $4, now(), now() + make_interval(secs => $5))`,
      [t.token_hash, t.client_id, t.user_id, t.auth_type, t.ttlSeconds]);
    // Expired tokens are of no use to anyone: cleared as new ones come.
    await q.query(`DELETE FROM idp_login_tokens WHERE expires_at < now() - interval '1 hour'`);
  },

  /** Marks the token used and returns it, if it was unused, unexpired and issued to this client. */
  async useLoginToken(q: Queryable, tokenHash: string, clientId: string): Promise<LoginTokenRow | undefined> {
    const { rows } = await q.query<LoginTokenRow>(
      `UPDATE idp_login_tokens SET used_at = now()
        WHERE token_hash = $1 AND client_id = $2 AND used_at IS NULL AND expires_at > now()
        RETURNING client_id, user_id::text, auth_type, auth_time`,
      [tokenHash, clientId]);
    return rows[0];
  },

  async insertReset(q: Queryable, r: { token_hash: string; user_id: string; client_id: string | null; return_to: string | null; ttlSeconds: number }): Promise<void> {
    await q.query(
      `INSERT INTO idp_password_resets (token_hash, user_id, client_id, return_to, expires_at)
       VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))`,
      [r.token_hash, r.user_id, r.client_id, r.return_to, r.ttlSeconds]);
  },

  /** How many reset links were sent to this user lately (a cap on mail bombing). */
  async recentResets(q: Queryable, userId: string, windowSeconds: number): Promise<number> {
    const { rows } = await q.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM idp_password_resets WHERE user_id = $1 AND created_at > now() - make_interval(secs => $2)`, [userId, windowSeconds]);
    return rows[0]!.n;
  },

  /** The reset if valid (unused, unexpired); `use` marks it used in the same statement. */
  async reset(q: Queryable, tokenHash: string, use: boolean): Promise<{ user_id: string; client_id: string | null; return_to: string | null } | undefined> {
    const { rows } = await q.query<{ user_id: string; client_id: string | null; return_to: string | null }>(use
      ? `UPDATE idp_password_resets SET used_at = now(), redeemed = true WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()
          RETURNING user_id::text, client_id, return_to`
      : `SELECT user_id::text, client_id, return_to FROM idp_password_resets WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()`,
    [tokenHash]);
    return rows[0];
  },

  /** Every other reset link of the user stops working (after a reset, or a password change). */
  async endResets(q: Queryable, userId: string): Promise<void> {
    await q.query('UPDATE idp_password_resets SET used_at = now() WHERE user_id = $1 AND used_at IS NULL', [userId]);
  },

  async insertMail(q: Queryable, m: { id: string; to_address: string; subject: string; body: string; transport: 'outbox' | 'smtp' }): Promise<void> {
    await q.query('INSERT INTO idp_mail_outbox (id, to_address, subject, body, transport) VALUES ($1, $2, $3, $4, $5)',
      [m.id, m.to_address, m.subject, m.body, m.transport]);
  },

  async mailSent(q: Queryable, id: string, error: string | null): Promise<void> {
    await q.query('UPDATE idp_mail_outbox SET sent_at = CASE WHEN $2::text IS NULL THEN now() END, error = $2 WHERE id = $1', [id, error]);
  },

  async mails(q: Queryable, limit: number): Promise<MailRow[]> {
    const { rows } = await q.query<MailRow>(
      'SELECT id::text, to_address, subject, body, created_at, transport, sent_at, error FROM idp_mail_outbox ORDER BY created_at DESC, id LIMIT $1', [limit]);
    return rows;
  },
};
