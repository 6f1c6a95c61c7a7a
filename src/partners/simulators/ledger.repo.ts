// SQL of the simulated partners' own records (they play external systems).
import type { Queryable } from '../../platform/db/index.ts';

export interface SimOperation {
  partner: string;
  key: string;
  kind: string;
  reference: string;
  parent_ref: string | null;
  amount: number;
  status: string;
  data: Record<string, unknown>;
  resolve_at: Date | null;
}

const COLS = 'partner, key, kind, reference, parent_ref, amount, status, data, resolve_at';

export const simRepo = {
  async byKey(q: Queryable, partner: string, key: string): Promise<SimOperation | undefined> {
    const { rows } = await q.query<SimOperation>(`SELECT ${COLS} FROM sim_partner_operations WHERE partner = $1 AND key = $2`, [partner, key]);
    return rows[0];
  },
  async byReference(q: Queryable, partner: string, reference: string, lock = false): Promise<SimOperation | undefined> {
    const { rows } = await q.query<SimOperation>(
      `SELECT ${COLS} FROM sim_partner_operations WHERE partner = $1 AND reference = $2${lock ? ' FOR UPDATE' : ''}`,
      [partner, reference],
    );
    return rows[0];
  },
  /** Inserts unless the key exists; undefined when it did. */
  async insertNew(q: Queryable, op: SimOperation): Promise<SimOperation | undefined> {
    const { rows } = await q.query<SimOperation>(
      `INSERT INTO sim_partner_operations (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (partner, key) DO NOTHING RETURNING ${COLS}`,
      [op.partner, op.key, op.kind, op.reference, op.parent_ref, op.amount, op.status, JSON.stringify(op.data), op.resolve_at],
    );
    return rows[0];
  },
  /**
   * A capture, refund or void of a recorded authorization, in one call (migration 0030;
   * every simulator, though that migration's header names the stateless ones only):
   * `op` is the answer the authorization's flags give; it becomes a refusal when the
   * amount is more than the room left under the authorization's lock. Returns what is
   * recorded for the key: `op` as stored, or the first call's (another reference).
   */
  async followUp(q: Queryable, op: SimOperation): Promise<SimOperation> {
    const { rows } = await q.query<SimOperation>(
      `SELECT ${COLS} FROM sim_follow_up($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [op.partner, op.key, op.kind, op.reference, op.parent_ref, op.amount, op.status, JSON.stringify(op.data), op.resolve_at],
    );
    return rows[0]!;
  },
  async setStatus(q: Queryable, partner: string, reference: string, status: string, data?: Record<string, unknown>): Promise<void> {
    await q.query(
      `UPDATE sim_partner_operations SET status = $3, resolve_at = NULL, data = data || $4::jsonb WHERE partner = $1 AND reference = $2`,
      [partner, reference, status, JSON.stringify(data ?? {})],
    );
  },
  /** Merges `data` into an operation's data (its status unchanged). */
  async patchData(q: Queryable, partner: string, reference: string, data: Record<string, unknown>): Promise<void> {
    await q.query('UPDATE sim_partner_operations SET data = data || $3::jsonb WHERE partner = $1 AND reference = $2', [partner, reference, JSON.stringify(data)]);
  },
  /**
   * Settles an operation still PROCESSING (a simulated timeout whose time has come);
   * false when another transaction settled it first (only the winner moves balances).
   */
  async resolveProcessing(q: Queryable, partner: string, reference: string, status: string): Promise<boolean> {
    const { rowCount } = await q.query(
      `UPDATE sim_partner_operations SET status = $3, resolve_at = NULL WHERE partner = $1 AND reference = $2 AND status = 'PROCESSING'`,
      [partner, reference, status],
    );
    return rowCount === 1;
  },
  async giftBalance(q: Queryable, fingerprint: string, initial: number, currency: string): Promise<number> {
    await q.query(
      `INSERT INTO sim_gift_cards (fingerprint, balance, currency) VALUES ($1, $2, $3) ON CONFLICT (fingerprint) DO NOTHING`,
      [fingerprint, initial, currency],
    );
    const { rows } = await q.query<{ balance: number }>('SELECT balance FROM sim_gift_cards WHERE fingerprint = $1 FOR UPDATE', [fingerprint]);
    return rows[0]!.balance;
  },
  async adjustGiftBalance(q: Queryable, fingerprint: string, delta: number): Promise<void> {
    await q.query('UPDATE sim_gift_cards SET balance = balance + $2 WHERE fingerprint = $1', [fingerprint, delta]);
  },
};
