// SQL of saved cards (migration 0046). A saved card's row is written by the database
// itself (the trigger payd_save_card) when a partner kept a card; payd reads, lists and
// deletes them here.
import type { Queryable } from '../platform/db/index.ts';

export interface SavedCardRow {
  id: string;
  entity_id: string;
  customer_reference: string | null;
  customer_email: string | null;
  partner: string;
  partner_reference: string;
  bin: string;
  last_four_digits: string;
  expiry_month: string;
  expiry_year: string;
  fingerprint: string;
  selected_network: string;
  funding_type: string;
  country_code: string | null;
  holder_name: string | null;
  created_at: Date;
}

const COLS = `id, entity_id, customer_reference, customer_email, partner, partner_reference, bin, last_four_digits, expiry_month,
  expiry_year, fingerprint, selected_network, funding_type, country_code, holder_name, created_at`;

/** The most cards one customer's list shows (newest first). */
export const SAVED_CARDS_LIST_LIMIT = 100;

export const savedCardsRepo = {
  /** The entity's saved card, unless deleted. */
  async get(q: Queryable, entityId: string, id: string): Promise<SavedCardRow | undefined> {
    const { rows } = await q.query<SavedCardRow>(
      `SELECT ${COLS} FROM saved_cards WHERE id = $1 AND entity_id = $2 AND deleted_at IS NULL`, [id, entityId]);
    return rows[0];
  },

  /** Several of the entity's saved cards by id (the deleted ones left out). */
  async getMany(q: Queryable, entityId: string, ids: string[]): Promise<SavedCardRow[]> {
    const { rows } = await q.query<SavedCardRow>(
      `SELECT ${COLS} FROM saved_cards WHERE id = ANY($1::uuid[]) AND entity_id = $2 AND deleted_at IS NULL`, [ids, entityId]);
    return rows;
  },

  /** A customer's saved cards (by reference, or by email), newest first. */
  async list(q: Queryable, entityId: string, by: { reference?: string; email?: string }): Promise<SavedCardRow[]> {
    const column = by.reference !== undefined ? 'customer_reference' : 'customer_email';
    const value = by.reference ?? by.email!.toLowerCase();
    const { rows } = await q.query<SavedCardRow>(
      `SELECT ${COLS} FROM saved_cards WHERE entity_id = $1 AND ${column} = $2 AND deleted_at IS NULL
        ORDER BY created_at DESC, id LIMIT ${SAVED_CARDS_LIST_LIMIT}`, [entityId, value]);
    return rows;
  },

  /**
   * The customer's saved card at this partner with this fingerprint (the same card saved
   * before), the oldest if several: a card saved again is merged into it (migration 0050).
   */
  async findSame(q: Queryable, entityId: string, partner: string, customer: { reference: string | null; email: string | null }, fingerprint: string): Promise<SavedCardRow | undefined> {
    const { rows } = await q.query<SavedCardRow>(
      `SELECT ${COLS} FROM saved_cards WHERE entity_id = $1 AND partner = $2 AND fingerprint = $3
          AND customer_reference IS NOT DISTINCT FROM $4 AND customer_email IS NOT DISTINCT FROM $5 AND deleted_at IS NULL
        ORDER BY created_at, id LIMIT 1`, [entityId, partner, fingerprint, customer.reference, customer.email]);
    return rows[0];
  },

  /** Marks the saved card deleted; the row as it was, or undefined when there was none (or it was deleted already). */
  async delete(q: Queryable, entityId: string, id: string): Promise<SavedCardRow | undefined> {
    const { rows } = await q.query<SavedCardRow>(
      `UPDATE saved_cards SET deleted_at = now() WHERE id = $1 AND entity_id = $2 AND deleted_at IS NULL RETURNING ${COLS}`, [id, entityId]);
    return rows[0];
  },
};
