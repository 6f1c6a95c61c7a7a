// SQL of the merchant's lists (GET /v2/payments, /v2/client-sessions, /v2/payment-links):
// keyset pagination in (created_at, id) order, newest first, always within one entity.
// Each list is served by an index that starts with entity_id (migration 0020), each
// filter by one of its own (0048); the page's statement is planned for its values
// (customPlan), so a rare value reads its few rows instead of the entity's whole history.
import { customPlan, type Queryable } from '../platform/db/index.ts';
import type { PageRequest } from '../platform/http/lists.ts';
import type { PaymentListQueryT } from './lists.schemas.ts';
import type { ClientSessionRow } from './client-sessions.repo.ts';
// Only for paymentLinks, which the dashboard's links page still calls (moved by the src/web/
// work: it will read through PaymentLinksService.list, and this import goes).
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
  /** customer.email of the payment (the stored view leaves the customer out), or null. */
  customer_email: string | null;
}

export const listsRepo = {
  page,

  /** Payments: their stored views (valid for `format`) where they have one. */
  async payments(q: Queryable, entityId: string, req: PageRequest, filter: Filter, format: string): Promise<PaymentListRow[] | undefined> {
    const f: Filter = { where: filter.where, params: [...filter.params, format] };
    const formatParam = `$${f.params.length}`;
    return page<PaymentListRow>(q, 'payments',
      `id, CASE WHEN view_version = version AND view_format = ${formatParam} THEN view END AS view, customer->>'email' AS customer_email`, entityId, req, f);
  },

  async clientSessions(q: Queryable, entityId: string, req: PageRequest, filter: Filter, columns: string): Promise<Array<ClientSessionRow & { payment_status: string | null }> | undefined> {
    return page(q, 'client_sessions s',
      `${columns}, (SELECT p.authorization_status FROM payments p WHERE p.id = s.payment_id) AS payment_status`, entityId, req, filter);
  },

  /** The dashboard's links page (PaymentLinksService.list is the API's). */
  async paymentLinks(q: Queryable, entityId: string, req: PageRequest, filter: Filter, columns: string): Promise<PaymentLinkRow[] | undefined> {
    return page(q, 'payment_links', columns, entityId, req, filter);
  },
};

/** Status filters of objects whose EXPIRED status is computed (CREATED past expires_at). */
export function statusFilter(f: Filter, statuses: string[], expirable: string): void {
  const parts: string[] = [];
  for (const s of new Set(statuses)) {
    if (s === 'EXPIRED') parts.push(`(status = 'CREATED' AND expires_at <= now())`);
    else if (s === expirable) parts.push(`(status = 'CREATED' AND expires_at > now())`);
    else {
      f.params.push(s);
      parts.push(`status = $${f.params.length}`);
    }
  }
  f.where.push(`(${parts.join(' OR ')})`);
}

/** The filter of a payment list query (GET /v2/payments and the dashboard's list). Each
 * condition has an index of its own (migration 0048): keep the expressions as it names them. */
export function paymentListFilter(q: PaymentListQueryT): Filter {
  const f: Filter = { where: [], params: [] };
  if (q.authorization_status) {
    const statuses = [...new Set(q.authorization_status.split(','))];
    // One status: an equality, so that its index gives the listing order.
    if (statuses.length === 1) addCondition(f, (p) => `authorization_status = ${p}`, statuses[0]);
    else addCondition(f, (p) => `authorization_status = ANY(${p}::text[])`, statuses);
  }
  // overview.captured / voided / refunded: payd_degree(part, whole) is NOT, PARTIALLY or FULLY.
  if (q.captured) addCondition(f, (p) => `payd_degree(total_captured, total_authorized) = ${p}`, q.captured);
  if (q.voided) addCondition(f, (p) => `payd_degree(total_voided, total_authorized) = ${p}`, q.voided);
  if (q.refunded) addCondition(f, (p) => `payd_degree(total_refunded, total_captured) = ${p}`, q.refunded);
  if (q.order_reference) addCondition(f, (p) => `order_reference = ${p}`, q.order_reference);
  if (q.partner) addCondition(f, (p) => `payd_split_keys(split) @> ARRAY[${p}::text]`, `partner:${q.partner}`);
  if (q.method) addCondition(f, (p) => `payd_split_keys(split) @> ARRAY[${p}::text]`, `method:${q.method}`);
  if (q.currency) addCondition(f, (p) => `currency = ${p}`, q.currency);
  if (q.amount_gte) addCondition(f, (p) => `amount >= ${p}`, Number(q.amount_gte));
  if (q.amount_lte) addCondition(f, (p) => `amount <= ${p}`, Number(q.amount_lte));
  if (q.customer_email) addCondition(f, (p) => `lower(customer->>'email') = lower(${p})`, q.customer_email);
  if (q.card_last_four) {
    addCondition(f, (p) => `EXISTS (SELECT 1 FROM partner_transactions t WHERE t.payment_id = payments.id AND t.kind = 'AUTHORIZATION' AND t.card->>'last_four_digits' = ${p})`, q.card_last_four);
  }
  return f;
}
