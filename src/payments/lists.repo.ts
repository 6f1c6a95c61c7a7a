// SQL of the merchant's lists (GET /v2/payments, /v2/client-sessions, /v2/payment-links):
// keyset pagination in (created_at, id) order, newest first, always within one entity.
// Each list is served by an index that starts with entity_id (migration 0020), each
// filter by one of its own (0048); the page's statement is planned for its values
// (customPlan), so a rare value reads its few rows instead of the entity's whole history.
import { customPlan, type Queryable } from '../platform/db/index.ts';
import type { PageRequest } from '../platform/http/lists.ts';
import type { ClientSessionRow } from './client-sessions.repo.ts';
import type { PaymentLinkRow } from '../links/links.repo.ts';

export type { PageRequest };

export interface Filter {
  /** SQL conditions on the table's columns, with $n placeholders numbered after `params`. */
  where: string[];
  params: unknown[];
}

/** Adds a condition whose value becomes the next parameter ($n). */
export function addCondition(f: Filter, sql: (p: string) => string, value: unknown): void {
  f.where.push(sql(`$${f.params.length + 1}`));
  f.params.push(value);
}

/**
 * A page of `table` for the entity: limit + 1 rows (the extra one tells has_more), in
 * listing order (newest first), or undefined when the cursor id is not the entity's.
 */
async function page<T>(q: Queryable, table: string, columns: string, entityId: string, req: PageRequest, filter: Filter): Promise<T[] | undefined> {
  const f: Filter = { where: [...filter.where], params: [...filter.params] };
  addCondition(f, (p) => `entity_id = ${p}`, entityId);
  if (req.createdGte) addCondition(f, (p) => `created_at >= ${p}`, req.createdGte);
  if (req.createdLt) addCondition(f, (p) => `created_at < ${p}`, req.createdLt);
  const cursor = req.after ?? req.before;
  const backwards = req.before !== undefined;
  if (cursor !== undefined) {
    const { rows } = await q.query(`SELECT 1 FROM ${table} WHERE id = $1 AND entity_id = $2`, [cursor, entityId]);
    if (rows.length === 0) return undefined;
    addCondition(f, (p) => `(created_at, id) ${backwards ? '>' : '<'} (SELECT created_at, id FROM ${table} WHERE id = ${p})`, cursor);
  }
  const dir = backwards ? 'ASC' : 'DESC';
  const { rows } = await q.query<T>(customPlan(
    `SELECT ${columns} FROM ${table} WHERE ${f.where.join(' AND ')} ORDER BY created_at ${dir}, id ${dir} LIMIT ${req.limit + 1}`),
    f.params,
  );
  return rows;
}

export interface PaymentListRow {
  id: string;
  /** The stored view when it is valid for `format` (else null: built from the ledger). */
  view: string | null;
}

export const listsRepo = {
  page,

  /** Payments: their stored views (valid for `format`) where they have one. */
  async payments(q: Queryable, entityId: string, req: PageRequest, filter: Filter, format: string): Promise<PaymentListRow[] | undefined> {
    const f: Filter = { where: filter.where, params: [...filter.params, format] };
    const formatParam = `$${f.params.length}`;
    return page<PaymentListRow>(q, 'payments',
      `id, CASE WHEN view_version = version AND view_format = ${formatParam} THEN view END AS view`, entityId, req, f);
  },

  async clientSessions(q: Queryable, entityId: string, req: PageRequest, filter: Filter, columns: string): Promise<Array<ClientSessionRow & { payment_status: string | null }> | undefined> {
    return page(q, 'client_sessions s',
      `${columns}, (SELECT p.authorization_status FROM payments p WHERE p.id = s.payment_id) AS payment_status`, entityId, req, filter);
  },

  async paymentLinks(q: Queryable, entityId: string, req: PageRequest, filter: Filter, columns: string): Promise<PaymentLinkRow[] | undefined> {
    return page(q, 'payment_links', columns, entityId, req, filter);
  },
};
