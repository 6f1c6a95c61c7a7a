// SQL of the merchant's lists (GET /v2/payments, /v2/client-sessions, /v2/payment-links):
// keyset pagination in (created_at, id) order, newest first, always within one entity.
// Each list is served by an index that starts with entity_id (migration 0020), each
// filter by one of its own (0048; partner and method: a key table, 0055); the page's statement is planned for its values
// (customPlan), so a rare value reads its few rows instead of the entity's whole history.
import { customPlan, type Queryable } from '../platform/db/index.ts';
import type { PageRequest } from '../platform/http/lists.ts';
import type { PaymentListQueryT } from './lists.schemas.ts';
import type { ClientSessionRow } from './client-sessions.repo.ts';
import type { AuthorizationStatus } from './common.schemas.ts';

export type { PageRequest };

export interface Filter {
  /** SQL conditions on the table's columns, with $n placeholders numbered after `params`. */
  where: string[];
  params: unknown[];
  /**
   * Tables joined to the page's table (payments) with their conditions, placeholders numbered
   * as where's: a key of payment_split_keys (the partner and method filters, splitKey()).
   */
  joins?: Array<{ sql: string; alias: string }>;
  /**
   * A range of amounts, whose index does not give the listing order: the page first takes
   * the entity's payments in that range from the amount index, up to FEW_MATCHES, and
   * sorts them when they are that few, whatever the planner estimates (page()).
   */
  amountRange?: { low: number; high: number };
}

/**
 * How many payments of an amount range the page sorts itself (payd_amount_matches,
 * migration 0053: read from the amount index's entries alone). Above that, walking the
 * listing order finds a page within (limit + 1) / share rows: about 1 % of the entity's
 * payments when more than 2 000 of 2 million are in the range, at most 2 000 payment rows read
 * below that (a middle range costs up to about that; a rare or common one far less).
 */
export const FEW_MATCHES = 2_000;

/** Adds a parameter; its placeholder ($n). */
function addParam(f: Filter, value: unknown): string {
  f.params.push(value);
  return `$${f.params.length}`;
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
  // The table's own columns are qualified (a joined table has entity_id and created_at too).
  const t = table.split(' ').at(-1)!;
  const joined = filter.joins ?? [];
  const joins = joined.map((j) => j.sql).join(' ');
  const from = `${table} ${joins}`;
  // The bounds of the page (created range, cursor) bound each joined key's index scan as well:
  // the planner does not carry an inequality over from payments.created_at to the key's.
  const bounded = [[`${t}.created_at`, `${t}.id`], ...joined.map((j) => [`${j.alias}.created_at`, `${j.alias}.payment_id`])] as const;
  addCondition(f, (p) => `${t}.entity_id = ${p}`, entityId);
  if (req.createdGte) addCondition(f, (p) => bounded.map(([at]) => `${at} >= ${p}`).join(' AND '), req.createdGte);
  if (req.createdLt) addCondition(f, (p) => bounded.map(([at]) => `${at} < ${p}`).join(' AND '), req.createdLt);
  const cursor = req.after ?? req.before;
  const backwards = req.before !== undefined;
  if (cursor !== undefined) {
    const { rows } = await q.query(`SELECT 1 FROM ${table} WHERE id = $1 AND entity_id = $2`, [cursor, entityId]);
    if (rows.length === 0) return undefined;
    addCondition(f, (p) => bounded.map(([at, id]) =>
      `(${at}, ${id}) ${backwards ? '>' : '<'} (SELECT c.created_at, c.id FROM ${table.split(' ')[0]} c WHERE c.id = ${p})`).join(' AND '), cursor);
  }
  const dir = backwards ? 'ASC' : 'DESC';
  const where = f.where.join(' AND ');
  // With a key joined, its payment_id (the same value as id) breaks ties: then the first key's
  // index gives the whole listing order (the join equates created_at, not id: see splitKey).
  const order = `ORDER BY ${t}.created_at ${dir}, ${joined[0] ? `${joined[0].alias}.payment_id` : `${t}.id`} ${dir} LIMIT ${req.limit + 1}`;
  if (!filter.amountRange) {
    const { rows } = await q.query<T>(customPlan(`SELECT ${columns} FROM ${from} WHERE ${where} ${order}`), f.params);
    return rows;
  }
  // A range's estimate comes from statistics that cannot tell this entity's amounts from
  // another's, nor a rare amount from the histogram bucket it falls in: planned on them, a
  // rare range walked the entity's whole history (246 ms at 2 million payments), or read
  // the whole table. So the statement takes the range's payments from the amount index
  // (payd_amount_matches: an index scan whatever the estimates), up to FEW_MATCHES: when
  // that few, it sorts them by the listing order the index gives with them and reads the
  // payments one by one until the page is full; when more, the one-time filter runs the walk in
  // listing order, which finds its page soon. The branch not taken is never executed.
  const low = addParam(f, filter.amountRange.low);
  const high = addParam(f, filter.amountRange.high);
  const entity = addParam(f, entityId);
  const { rows } = await q.query<T & { _at?: unknown; _id?: unknown }>(customPlan(
    `WITH matches AS MATERIALIZED (SELECT match_id, match_created_at FROM payd_amount_matches(${entity}::uuid, ${low}::bigint, ${high}::bigint, ${FEW_MATCHES + 1}))
    SELECT * FROM (
      (SELECT ${columns}, ${t}.created_at AS _at, ${t}.id AS _id FROM matches JOIN ${table} ON ${t}.id = match_id ${joins}
        WHERE ${where} AND (SELECT count(*) FROM matches) <= ${FEW_MATCHES} ORDER BY match_created_at ${dir}, match_id ${dir} LIMIT ${req.limit + 1})
      UNION ALL
      (SELECT ${columns}, ${t}.created_at AS _at, ${t}.id AS _id FROM ${from} WHERE ${where} AND (SELECT count(*) FROM matches) > ${FEW_MATCHES} ${order})
    ) page ORDER BY _at ${dir}, _id ${dir}`),
    f.params,
  );
  for (const r of rows) { delete r._at; delete r._id; }
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
    const f: Filter = { ...filter, params: [...filter.params, format] };
    const formatParam = `$${f.params.length}`;
    return page<PaymentListRow>(q, 'payments',
      `id, CASE WHEN view_version = version AND view_format = ${formatParam} THEN view END AS view, customer->>'email' AS customer_email`, entityId, req, f);
  },

  async clientSessions(q: Queryable, entityId: string, req: PageRequest, filter: Filter, columns: string): Promise<Array<ClientSessionRow & { payment_status: AuthorizationStatus | null }> | undefined> {
    return page(q, 'client_sessions s',
      `${columns}, (SELECT p.authorization_status FROM payments p WHERE p.id = s.payment_id) AS payment_status`, entityId, req, filter);
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

/**
 * The payments with this key in their split (payd_split_keys: 'partner:<name>' or
 * 'method:<name>'): a join of payment_split_keys (migration 0055), whose primary key is the
 * key's listing order within the entity. A rare key's page reads its few entries backwards
 * from the newest, then their payments; a common one walks the payments' listing order (or
 * another filter's index) and probes the key by its primary key. created_at is equated, so
 * that either order is the page's; payment_id is bounded to the payment's id instead of
 * equated: with both equated the planner multiplied two near-unique columns' selectivities,
 * expected one row for a common key, and hash-joined both tables whole (3.6 s at 2 million
 * payments, against 0.2 ms). page() breaks ties by the first key's payment_id.
 */
function splitKey(f: Filter, key: string): void {
  const k = `k${(f.joins?.length ?? 0) + 1}`;
  const p = addParam(f, key);
  (f.joins ??= []).push({ alias: k, sql: `JOIN payment_split_keys ${k} ON ${k}.entity_id = payments.entity_id AND ${k}.key = ${p}
    AND ${k}.created_at = payments.created_at AND ${k}.payment_id >= payments.id AND ${k}.payment_id <= payments.id` });
}

/** The filter of a payment list query (GET /v2/payments and the dashboard's list). Each
 * condition has an index of its own (migrations 0048, 0055): keep the expressions as they name them. */
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
  if (q.partner) splitKey(f, `partner:${q.partner}`);
  if (q.method) splitKey(f, `method:${q.method}`);
  if (q.currency) addCondition(f, (p) => `currency = ${p}`, q.currency);
  if (q.amount_gte) addCondition(f, (p) => `amount >= ${p}`, Number(q.amount_gte));
  if (q.amount_lte) addCondition(f, (p) => `amount <= ${p}`, Number(q.amount_lte));
  if (q.amount_gte || q.amount_lte) {
    f.amountRange = { low: q.amount_gte ? Number(q.amount_gte) : Number.MIN_SAFE_INTEGER, high: q.amount_lte ? Number(q.amount_lte) : Number.MAX_SAFE_INTEGER };
  }
  if (q.customer_email) addCondition(f, (p) => `lower(customer->>'email') = lower(${p})`, q.customer_email);
  if (q.card_last_four) {
    addCondition(f, (p) => `EXISTS (SELECT 1 FROM partner_transactions t WHERE t.payment_id = payments.id AND t.kind = 'AUTHORIZATION' AND t.card->>'last_four_digits' = ${p})`, q.card_last_four);
  }
  return f;
}
