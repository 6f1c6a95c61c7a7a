// SQL for the signing keys table.
import type { JWK } from 'jose';
import type { Queryable } from '../db/index.ts';
import type { KeyAlg } from './keystore.ts';

export interface KeyRow {
  kid: string;
  purpose: string;
  alg: KeyAlg;
  public_jwk: JWK;
  private_key_enc: string;
  retired_at: Date | null;
  expires_at: Date | null;
}

const LOCK_KEY = 0x6b657973; // "keys"

export const keysRepo = {
  /** Serializes key creation and rotation across processes, for the current transaction. */
  async lock(tx: Queryable): Promise<void> {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
  },
  async insert(q: Queryable, k: { kid: string; purpose: string; alg: KeyAlg; publicJwk: JWK; privateKeyEnc: string }): Promise<void> {
    await q.query(
      'INSERT INTO signing_keys (kid, purpose, alg, public_jwk, private_key_enc) VALUES ($1, $2, $3, $4, $5)',
      [k.kid, k.purpose, k.alg, JSON.stringify(k.publicJwk), k.privateKeyEnc],
    );
  },
  async hasActive(q: Queryable, purpose: string): Promise<boolean> {
    const { rows } = await q.query('SELECT 1 FROM signing_keys WHERE purpose = $1 AND retired_at IS NULL LIMIT 1', [purpose]);
    return rows.length > 0;
  },
  /** Retires the active keys of a purpose; they stay published for overlapSeconds. */
  async retireActive(q: Queryable, purpose: string, overlapSeconds: number): Promise<void> {
    await q.query(
      `UPDATE signing_keys SET retired_at = now(), expires_at = now() + make_interval(secs => $2)
        WHERE purpose = $1 AND retired_at IS NULL`,
      [purpose, overlapSeconds],
    );
  },
  /** The sealed secret of every active key; none when the table does not exist yet (a new database). */
  async activeSealed(q: Queryable): Promise<Pick<KeyRow, 'kid' | 'purpose' | 'private_key_enc'>[]> {
    const { rows: [table] } = await q.query<{ present: boolean }>("SELECT to_regclass('signing_keys') IS NOT NULL AS present");
    if (!table?.present) return [];
    const { rows } = await q.query<Pick<KeyRow, 'kid' | 'purpose' | 'private_key_enc'>>(
      'SELECT kid, purpose, private_key_enc FROM signing_keys WHERE retired_at IS NULL ORDER BY purpose, kid',
    );
    return rows;
  },
  /** Keys not yet expired, newest first. */
  async live(q: Queryable, purpose: string): Promise<KeyRow[]> {
    const { rows } = await q.query<KeyRow>(
      `SELECT kid, purpose, alg, public_jwk, private_key_enc, retired_at, expires_at
         FROM signing_keys
        WHERE purpose = $1 AND (expires_at IS NULL OR expires_at > now())
        ORDER BY created_at DESC, kid`,
      [purpose],
    );
    return rows;
  },
};
