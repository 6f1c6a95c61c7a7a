// SQL of the second factor (mfa.ts): the TOTP authenticator (idp_mfa_totp, its secret
// sealed), recovery codes (idp_mfa_recovery_codes, hashed), pending sign-ins
// (idp_mfa_pending, by the hash of their cookie), and the count of a user's factors
// (passkeys included, idp_passkeys).
import type { Queryable } from '../../platform/db/index.ts';

export type PendingAuthType = 'password' | 'social';

export const mfaRepo = {
  /** A confirmed authenticator counts one, each passkey one. */
  async factorCount(q: Queryable, userId: string): Promise<number> {
    const r = await q.query<{ n: string | number }>(
      `SELECT (SELECT count(*) FROM idp_mfa_totp WHERE user_id = $1 AND confirmed_at IS NOT NULL)
            + (SELECT count(*) FROM idp_passkeys WHERE user_id = $1) AS n`, [userId]);
    return Number(r.rows[0]!.n);
  },

  /** A confirmed authenticator or a passkey. */
  async hasFactor(q: Queryable, userId: string): Promise<boolean> {
    const r = await q.query(
      `SELECT 1 FROM idp_mfa_totp WHERE user_id = $1 AND confirmed_at IS NOT NULL
       UNION ALL SELECT 1 FROM idp_passkeys WHERE user_id = $1 LIMIT 1`, [userId]);
    return r.rows.length > 0;
  },

  async recoveryLeft(q: Queryable, userId: string): Promise<number> {
    const r = await q.query<{ n: string | number }>('SELECT count(*) AS n FROM idp_mfa_recovery_codes WHERE user_id = $1 AND used_at IS NULL', [userId]);
    return Number(r.rows[0]!.n);
  },

  /** The user's authenticator (confirmed_at null: enrolment not confirmed), if any. */
  async totp(q: Queryable, userId: string): Promise<{ confirmed_at: Date | null } | undefined> {
    const t = await q.query<{ confirmed_at: Date | null }>('SELECT confirmed_at FROM idp_mfa_totp WHERE user_id = $1', [userId]);
    return t.rows[0];
  },

  /** A new secret for the user's enrolment (replaces an unconfirmed one): false over a confirmed one. */
  async startTotp(q: Queryable, userId: string, secretEnc: string): Promise<boolean> {
    const r = await q.query(
      `INSERT INTO idp_mfa_totp (user_id, secret_enc) VALUES ($1, $2)
       ON CONFLICT (user_id) DO UPDATE SET secret_enc = EXCLUDED.secret_enc, last_step = 0, created_at = now() WHERE idp_mfa_totp.confirmed_at IS NULL
       RETURNING user_id`, [userId, secretEnc]);
    return r.rows.length > 0;
  },

  /** The sealed secret of the enrolment under way, if any. */
  async pendingSecret(q: Queryable, userId: string): Promise<string | undefined> {
    const r = await q.query<{ secret_enc: string }>('SELECT secret_enc FROM idp_mfa_totp WHERE user_id = $1 AND confirmed_at IS NULL', [userId]);
    return r.rows[0]?.secret_enc;
  },

  /** The sealed secret of the confirmed authenticator (confirmed) or of the enrolment (not), if any. */
  async secret(q: Queryable, userId: string, confirmed: boolean): Promise<string | undefined> {
    const r = await q.query<{ secret_enc: string }>(
      `SELECT secret_enc FROM idp_mfa_totp WHERE user_id = $1 AND (confirmed_at IS NOT NULL) = $2`, [userId, confirmed]);
    return r.rows[0]?.secret_enc;
  },

  /** Takes the time step if it is later than the last one used (and confirms an enrolment): false otherwise. */
  async useStep(q: Queryable, userId: string, step: number, confirmed: boolean): Promise<boolean> {
    const used = await q.query(
      `UPDATE idp_mfa_totp SET last_step = $2, confirmed_at = COALESCE(confirmed_at, now())
       WHERE user_id = $1 AND last_step < $2 AND (confirmed_at IS NOT NULL) = $3 RETURNING user_id`, [userId, step, confirmed]);
    return used.rows.length > 0;
  },

  async deleteTotp(q: Queryable, userId: string): Promise<void> {
    await q.query('DELETE FROM idp_mfa_totp WHERE user_id = $1', [userId]);
  },

  async deleteRecoveryCodes(q: Queryable, userId: string): Promise<void> {
    await q.query('DELETE FROM idp_mfa_recovery_codes WHERE user_id = $1', [userId]);
  },

  async insertRecoveryCode(q: Queryable, userId: string, codeHash: string): Promise<void> {
    await q.query('INSERT INTO idp_mfa_recovery_codes (user_id, code_hash) VALUES ($1, $2)', [userId, codeHash]);
  },

  /** Uses an unused recovery code once: false when there is none with this hash. */
  async useRecoveryCode(q: Queryable, userId: string, codeHash: string): Promise<boolean> {
    const r = await q.query(
      'UPDATE idp_mfa_recovery_codes SET used_at = now() WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL RETURNING user_id', [userId, codeHash]);
    return r.rows.length > 0;
  },

  async deleteExpiredPending(q: Queryable): Promise<void> {
    await q.query('DELETE FROM idp_mfa_pending WHERE expires_at < now()');
  },

  async insertPending(q: Queryable, idHash: string, userId: string, authType: PendingAuthType, seconds: number): Promise<void> {
    await q.query(`INSERT INTO idp_mfa_pending (id_hash, user_id, auth_type, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))`,
      [idHash, userId, authType, seconds]);
  },

  /** The live pending sign-in (unexpired, fewer than maxFailures wrong codes), if any. */
  async pending(q: Queryable, idHash: string, maxFailures: number): Promise<{ user_id: string; auth_type: PendingAuthType } | undefined> {
    const r = await q.query<{ user_id: string; auth_type: PendingAuthType }>(
      'SELECT user_id, auth_type FROM idp_mfa_pending WHERE id_hash = $1 AND expires_at > now() AND failures < $2', [idHash, maxFailures]);
    return r.rows[0];
  },

  /** Counts a wrong code: the failures now (undefined: no such pending sign-in). */
  async failPending(q: Queryable, idHash: string): Promise<number | undefined> {
    const r = await q.query<{ failures: number }>('UPDATE idp_mfa_pending SET failures = failures + 1 WHERE id_hash = $1 RETURNING failures', [idHash]);
    return r.rows[0]?.failures;
  },

  async deletePending(q: Queryable, idHash: string): Promise<void> {
    await q.query('DELETE FROM idp_mfa_pending WHERE id_hash = $1', [idHash]);
  },
};
