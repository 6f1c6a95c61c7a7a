// Seeds an entity's lists by SQL (generate_series), for bench/lists.ts and the list plan
// test (test/payments/list-plans.test.ts): payments with a partner transaction each,
// client sessions, payment links, events and their deliveries, whose filter values are common, rare
// (about one row in 1000 to 10 000) or absent, as LIST_FILTERS names them.
import type { Queryable, QueryResult } from '../src/platform/db/index.ts';
import { type Filter, listsRepo, paymentListFilter, statusFilter } from '../src/payments/lists.repo.ts';
import type { PaymentListQueryT } from '../src/payments/lists.schemas.ts';
import { type EventStatus, eventsRepo } from '../src/webhooks/events.repo.ts';

/**
 * Rows g = from..to of each table for the entity (a range, so that a bench grows the
 * same entity step by step). created_at goes back one second per row from `now`. Each
 * payment has a stored view of `viewFormat` (as payd keeps them: the lists serve it), of
 * a Payment's usual size.
 */
export async function seedLists(q: Queryable, entityId: string, from: number, to: number, viewFormat: string, now = new Date('2026-11-01T00:00:00Z')): Promise<void> {
  const args = [entityId, from, to, now];
  // Running totals are set here as the ledger would leave them: the ledger's triggers are off meanwhile.
  await q.query(`INSERT INTO payments (id, entity_id, amount, currency, capture_mode, order_reference, customer, split, authorization_status,
      total_authorized, total_captured, total_refunded, total_voided, created_at, updated_at, view, view_version, view_format)
    SELECT r.*, r.created_at, json_build_object('id', r.id, 'created_at', r.created_at, 'amount', r.amount, 'currency', r.currency,
        'order_reference', r.order_reference, 'customer', r.customer, 'split', r.split, 'authorization', json_build_object('status', r.status),
        'amounts', json_build_object('total_captured', r.captured, 'total_refunded', r.refunded, 'total_voided', r.voided),
        'padding', repeat('x', 1500))::text, 1, $5
    FROM (SELECT md5($1::text || ':p:' || g)::uuid AS id, $1::uuid AS entity_id, s.amount,
      CASE WHEN g % 10000 = 5 THEN 'JPY' WHEN g % 100 = 3 THEN 'USD' ELSE 'EUR' END AS currency,
      'MANUAL' AS capture_mode, 'order-' || g AS order_reference, jsonb_build_object('email', 'shopper' || (g % 50000) || '@example.com') AS customer,
      CASE WHEN g % 1000 = 11
        THEN jsonb_build_array(jsonb_build_object('partner', 'gift-sim', 'method', 'GIFT_CARD', 'amount', 100),
                               jsonb_build_object('partner', 'card-sim', 'method', 'CARD', 'amount', s.amount - 100))
        ELSE jsonb_build_array(jsonb_build_object('partner', 'card-sim', 'method', 'CARD', 'amount', s.amount)) END AS split,
      s.status,
      s.authorized,
      CASE WHEN g % 2000 = 13 THEN s.authorized / 2 WHEN g % 10 = 0 THEN 0 ELSE s.authorized END AS captured,
      CASE WHEN g % 3000 = 17 THEN s.authorized / 2 WHEN g % 50 = 1 THEN s.authorized ELSE 0 END AS refunded,
      CASE WHEN g % 4000 = 19 THEN s.authorized / 2 ELSE 0 END AS voided,
      $4::timestamptz - g * interval '1 second' AS created_at
    FROM generate_series($2::int, $3::int) g,
      LATERAL (SELECT CASE WHEN g % 10000 = 7 THEN 5000000 ELSE 1000 + (g::bigint * 7919) % 99000 END::bigint AS amount,
                      CASE WHEN g % 5000 = 23 THEN 'PENDING' WHEN g % 40 = 2 THEN 'REFUSED' ELSE 'AUTHORIZED' END AS status) s0,
      LATERAL (SELECT s0.amount, s0.status, CASE WHEN s0.status = 'AUTHORIZED' THEN s0.amount ELSE 0 END AS authorized) s) r`,
  [...args, viewFormat]);
  await q.query('ALTER TABLE partner_transactions DISABLE TRIGGER USER');
  try {
    await q.query(`INSERT INTO partner_transactions (id, payment_id, kind, seq, partner, method, amount, status, partner_key, card, created_at, updated_at)
      SELECT md5($1::text || ':t:' || g)::uuid, md5($1::text || ':p:' || g)::uuid, 'AUTHORIZATION', 1, 'card-sim', 'CARD', 1000, 'AUTHORIZED',
        md5($1::text || ':k:' || g), jsonb_build_object('last_four_digits', CASE WHEN g % 5000 = 29 THEN '0005' ELSE '4242' END, 'brand', 'VISA'),
        $4::timestamptz - g * interval '1 second', $4::timestamptz - g * interval '1 second'
      FROM generate_series($2::int, $3::int) g`, args);
  } finally {
    await q.query('ALTER TABLE partner_transactions ENABLE TRIGGER USER');
  }
  // Sessions and links: one for ten payments, all past their expiry (CREATED ones are EXPIRED).
  await q.query(`INSERT INTO client_sessions (id, entity_id, status, amount, currency, capture_mode, integration_mode, expires_at, created_at, updated_at)
    SELECT md5($1::text || ':s:' || g)::uuid, $1::uuid, CASE WHEN g % 1000 = 30 THEN 'ABORTED_BY_MERCHANT' WHEN g % 3 = 0 THEN 'CREATED' ELSE 'SUBMITTED' END,
      1000, 'EUR', 'MANUAL', 'HOSTED', $4::timestamptz - g * interval '1 second' + interval '30 minutes',
      $4::timestamptz - g * interval '1 second', $4::timestamptz - g * interval '1 second'
    FROM generate_series($2::int, $3::int) g WHERE g % 10 = 0`, args);
  await q.query(`INSERT INTO payment_links (id, entity_id, status, amount, currency, capture_mode, expires_at, created_at, updated_at)
    SELECT md5($1::text || ':l:' || g)::uuid, $1::uuid, CASE WHEN g % 1000 = 40 THEN 'CANCELLED' WHEN g % 3 = 0 THEN 'CREATED' ELSE 'PAID' END,
      1000, 'EUR', 'MANUAL', $4::timestamptz - g * interval '1 second' + interval '7 days',
      $4::timestamptz - g * interval '1 second', $4::timestamptz - g * interval '1 second'
    FROM generate_series($2::int, $3::int) g WHERE g % 10 = 0`, args);
  // Events: one a payment.
  await q.query(`INSERT INTO webhook_events (id, entity_id, type, data, created_at)
    SELECT md5($1::text || ':e:' || g)::uuid, $1::uuid,
      CASE WHEN g % 5000 = 41 THEN 'payment.refunded' WHEN g % 2 = 0 THEN 'payment.captured' ELSE 'payment.authorized' END,
      '{}'::jsonb, $4::timestamptz - g * interval '1 second'
    FROM generate_series($2::int, $3::int) g`, args);
  // Their deliveries, done: DELIVERED, a few FAILED (none PENDING: a running payd would send them).
  await q.query(`INSERT INTO webhook_deliveries (id, event_id, entity_id, reason, status, attempt_count, created_at, updated_at)
    SELECT md5($1::text || ':d:' || g)::uuid, md5($1::text || ':e:' || g)::uuid, $1::uuid, 'EVENT',
      CASE WHEN g % 5000 = 43 THEN 'FAILED' ELSE 'DELIVERED' END, 1,
      $4::timestamptz - g * interval '1 second', $4::timestamptz - g * interval '1 second'
    FROM generate_series($2::int, $3::int) g`, args);
}

export type ListPath = '/v2/payments' | '/v2/client-sessions' | '/v2/payment-links' | '/v2/events' | '/admin/v1/entities/{id}/webhook-events';

export interface ListFilterCase {
  path: ListPath;
  /** The query parameter and its common, rare and absent values in seeded data. */
  param: string;
  common: string;
  rare: string;
  absent: string;
  /** The index a rare or absent value's page must read (migrations 0020 and 0048; partner and method: 0055's key table), a RegExp source; for amounts, the function that reads theirs (0053). */
  index: string;
}

/** Every filter of the lists with its values in seedLists's data. */
export const LIST_FILTERS: ListFilterCase[] = [
  { path: '/v2/payments', param: 'authorization_status', common: 'AUTHORIZED', rare: 'PENDING', absent: 'ERROR', index: 'payments_entity_status_created_idx' },
  { path: '/v2/payments', param: 'captured', common: 'FULLY', rare: 'PARTIALLY', absent: 'PARTIALLY', index: 'payments_entity_captured_created_idx' },
  { path: '/v2/payments', param: 'refunded', common: 'NOT', rare: 'PARTIALLY', absent: 'PARTIALLY', index: 'payments_entity_refunded_created_idx' },
  { path: '/v2/payments', param: 'voided', common: 'NOT', rare: 'PARTIALLY', absent: 'FULLY', index: 'payments_entity_voided_created_idx' },
  { path: '/v2/payments', param: 'order_reference', common: 'order-1', rare: 'order-2', absent: 'order-none', index: 'payments_entity_order_reference_idx' },
  { path: '/v2/payments', param: 'partner', common: 'card-sim', rare: 'gift-sim', absent: 'no-such-partner', index: 'payment_split_keys_pkey' },
  { path: '/v2/payments', param: 'method', common: 'CARD', rare: 'GIFT_CARD', absent: 'IDEAL', index: 'payment_split_keys_pkey' },
  { path: '/v2/payments', param: 'currency', common: 'EUR', rare: 'JPY', absent: 'GBP', index: 'payments_entity_currency_created_idx' },
  { path: '/v2/payments', param: 'amount_gte', common: '1000', rare: '4000000', absent: '9000000', index: 'payd_amount_matches' },
  { path: '/v2/payments', param: 'amount_lte', common: '999999', rare: '1010', absent: '999', index: 'payd_amount_matches' },
  { path: '/v2/payments', param: 'customer_email', common: 'shopper1@example.com', rare: 'shopper2@example.com', absent: 'nobody@example.com', index: 'payments_entity_email_created_idx' },
  { path: '/v2/payments', param: 'card_last_four', common: '4242', rare: '0005', absent: '9999', index: 'partner_transactions_card_last_four_idx' },
  { path: '/v2/client-sessions', param: 'status', common: 'SUBMITTED', rare: 'ABORTED_BY_MERCHANT', absent: 'CREATED', index: 'client_sessions_entity_status_(created|expires)_idx' },
  { path: '/v2/payment-links', param: 'status', common: 'PAID', rare: 'CANCELLED', absent: 'CREATED', index: 'payment_links_entity_status_(created|expires)_idx' },
  { path: '/v2/events', param: 'type', common: 'payment.captured', rare: 'payment.refunded', absent: 'payment.voided', index: 'webhook_events_entity_type_created_idx' },
  { path: '/admin/v1/entities/{id}/webhook-events', param: 'status', common: 'DELIVERED', rare: 'FAILED', absent: 'PENDING', index: 'webhook_deliveries_(entity_status|due)_idx' },
];

/** Runs the first page of `c`'s list with `value` for the entity on q, with the statements the routes run. */
export async function runList(q: Queryable, entityId: string, c: ListFilterCase, value: string, viewFormat: string): Promise<unknown[] | undefined> {
  const req = { limit: 20 };
  const f: Filter = { where: [], params: [] };
  switch (c.path) {
    case '/v2/payments':
      return listsRepo.payments(q, entityId, req, paymentListFilter({ [c.param]: value } as PaymentListQueryT), viewFormat);
    case '/v2/client-sessions':
      statusFilter(f, [value], 'CREATED');
      return listsRepo.clientSessions(q, entityId, req, f, 'id');
    case '/v2/payment-links':
      statusFilter(f, [value], 'CREATED');
      return listsRepo.page(q, 'payment_links', 'id', entityId, req, f);
    case '/v2/events':
      return eventsRepo.page(q, entityId, { limit: 20, order: 'desc', types: [value] });
    case '/admin/v1/entities/{id}/webhook-events':
      return eventsRepo.list(q, entityId, 21, { status: value as EventStatus });
  }
}

/** The statements fn runs on q, in order (they run). */
export async function captured(q: Queryable, fn: (q: Queryable) => Promise<unknown>): Promise<Array<{ sql: string; params: readonly unknown[] }>> {
  const seen: Array<{ sql: string; params: readonly unknown[] }> = [];
  const spy: Queryable = {
    query<T>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<T>> {
      seen.push({ sql, params });
      return q.query<T>(sql, params);
    },
    exec: (sql) => q.exec(sql),
  };
  await fn(spy);
  return seen;
}
