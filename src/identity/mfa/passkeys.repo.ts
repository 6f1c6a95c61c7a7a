// SQL of passkeys (passkeys.ts): the credentials (idp_passkeys) and their single-use
// challenges (idp_passkey_challenges, by their SHA-256; a second step's bound to the
// pending sign-in's hash). Times come from the caller (the app clock).
import type { Queryable } from '../../platform/db/index.ts';

export interface PasskeyRow { id: string; name: string; created_at: Date; last_used_at: Date | null; transports: string[]; backed_up: boolean }

export type ChallengePurpose = 'register' | 'authenticate';

/** A credential as the verification needs it. */
export interface CredentialRow { id: string; credential_id: string; public_key: Buffer | Uint8Array; counter: string | number; transports: string[] }

export interface NewPasskey {
  id: string;
  userId: string;
  credentialId: string;
  publicKey: Buffer;
  counter: number;
  transports: string[];
  name: string;
  backedUp: boolean;
}

export const passkeysRepo = {
  async list(q: Queryable, userId: string): Promise<PasskeyRow[]> {
    const r = await q.query<PasskeyRow>(
      'SELECT id, name, created_at, last_used_at, transports, backed_up FROM idp_passkeys WHERE user_id = $1 ORDER BY created_at, id', [userId]);
    return r.rows;
  },

  async has(q: Queryable, userId: string): Promise<boolean> {
    return (await q.query('SELECT 1 FROM idp_passkeys WHERE user_id = $1 LIMIT 1', [userId])).rows.length > 0;
  },

  /** The user's credential ids and transports (the options of a ceremony). */
  async credentials(q: Queryable, userId: string): Promise<Array<{ credential_id: string; transports: string[] }>> {
    const r = await q.query<{ credential_id: string; transports: string[] }>('SELECT credential_id, transports FROM idp_passkeys WHERE user_id = $1', [userId]);
    return r.rows;
  },

  async deleteExpiredChallenges(q: Queryable, now: Date): Promise<void> {
    await q.query('DELETE FROM idp_passkey_challenges WHERE expires_at < $1', [now]);
  },

  /** Voids the user's enrolment challenge. */
  async deleteRegisterChallenges(q: Queryable, userId: string): Promise<void> {
    await q.query("DELETE FROM idp_passkey_challenges WHERE user_id = $1 AND purpose = 'register'", [userId]);
  },

  /** Voids the pending sign-in's challenge. */
  async deleteAuthenticateChallenges(q: Queryable, pendingHash: string): Promise<void> {
    await q.query("DELETE FROM idp_passkey_challenges WHERE pending_hash = $1 AND purpose = 'authenticate'", [pendingHash]);
  },

  async insertChallenge(q: Queryable, challengeHash: string, userId: string, purpose: ChallengePurpose, pendingHash: string | null, expiresAt: Date): Promise<void> {
    await q.query('INSERT INTO idp_passkey_challenges (challenge_hash, user_id, purpose, pending_hash, expires_at) VALUES ($1, $2, $3, $4, $5)',
      [challengeHash, userId, purpose, pendingHash, expiresAt]);
  },

  /** Takes the challenge once (one DELETE ... RETURNING): true when it was live at `now` and bound so. */
  async takeChallenge(q: Queryable, challengeHash: string, userId: string, purpose: ChallengePurpose, pendingHash: string | null, now: Date): Promise<boolean> {
    const r = await q.query(
      `DELETE FROM idp_passkey_challenges WHERE challenge_hash = $1 AND user_id = $2 AND purpose = $3 AND pending_hash IS NOT DISTINCT FROM $4 AND expires_at > $5
       RETURNING user_id`, [challengeHash, userId, purpose, pendingHash, now]);
    return r.rows.length > 0;
  },

  /** Stores the passkey unless its credential is registered or the user has `maxPerUser`: its row, else undefined. */
  async insert(q: Queryable, p: NewPasskey, maxPerUser: number): Promise<PasskeyRow | undefined> {
    const r = await q.query<PasskeyRow>(
      `INSERT INTO idp_passkeys (id, user_id, credential_id, public_key, counter, transports, name, backed_up)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE (SELECT count(*) FROM idp_passkeys WHERE user_id = $2) < $9
       ON CONFLICT (credential_id) DO NOTHING
       RETURNING id, name, created_at, last_used_at, transports, backed_up`,
      [p.id, p.userId, p.credentialId, p.publicKey, p.counter, p.transports, p.name, p.backedUp, maxPerUser]);
    return r.rows[0];
  },

  /** The user's credential with this credential id, if any. */
  async credential(q: Queryable, credentialId: string, userId: string): Promise<CredentialRow | undefined> {
    const r = await q.query<CredentialRow>(
      'SELECT id, credential_id, public_key, counter, transports FROM idp_passkeys WHERE credential_id = $1 AND user_id = $2', [credentialId, userId]);
    return r.rows[0];
  },

  /** Records a use if the counter grew (both 0: an authenticator that keeps none): false otherwise. */
  async use(q: Queryable, id: string, userId: string, counter: number, backedUp: boolean): Promise<boolean> {
    const used = await q.query(
      `UPDATE idp_passkeys SET counter = $3, last_used_at = now(), backed_up = $4
       WHERE id = $1 AND user_id = $2 AND (counter < $3 OR (counter = 0 AND $3 = 0)) RETURNING id`,
      [id, userId, counter, backedUp]);
    return used.rows.length > 0;
  },

  /** Deletes the user's passkey: false when it is not one of theirs. */
  async delete(q: Queryable, id: string, userId: string): Promise<boolean> {
    const r = await q.query('DELETE FROM idp_passkeys WHERE id = $1 AND user_id = $2 RETURNING id', [id, userId]);
    return r.rows.length > 0;
  },
};
