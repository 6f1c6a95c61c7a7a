// The merchant's lists: GET /v2/payments, /v2/client-sessions, /v2/payment-links.
// Cursor pagination newest first (starting_after / ending_before take an id of the
// entity's), filters as query parameters, items exactly as GET of each object shows it
// (payments: the stored data, as with Cache-Control max-age: no partner is asked).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type Static, Type, type TSchema } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { allowedLagMs, type ReadRouter } from '../platform/db/reads.ts';
import { problems } from '../platform/http/problem.ts';
import { problemResponses, StringEnum, Uuid } from '../platform/http/schemas.ts';
import { AUTHORIZATION_STATUSES, CURRENCIES } from './common.schemas.ts';
import { addCondition, type Filter, listsRepo } from './lists.repo.ts';
import { ListOf, PageQuery, pageOf, pageRequest, StaleReadHeaders, unknownCursor, ValueList } from '../platform/http/lists.ts';

// Kept importable from here for the dashboard's pages (they move with the src/web/ work).
export { pageOf, pageRequest, StaleReadHeaders };
import type { PaymentsService } from './payments.service.ts';
import type { ClientSessionsService } from './client-sessions.service.ts';
import { SESSION_COLUMNS, SESSION_STATUSES } from './client-sessions.repo.ts';
import type { PaymentLinksService } from '../links/links.service.ts';
import { LINK_COLUMNS } from '../links/links.repo.ts';

const bearer = { schemes: ['bearer' as const], scope: 'payment-api' };
const security = [{ bearerAuth: [] }];

const AmountQuery = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]{0,14})$', description });

export const DEGREES = ['NOT', 'PARTIALLY', 'FULLY'] as const;

const PaymentListQuery = Type.Object({
  ...PageQuery,
  authorization_status: Type.Optional(ValueList(AUTHORIZATION_STATUSES, 'Authorization status')),
  captured: Type.Optional(StringEnum(DEGREES, "overview.captured: how much of the authorized amount was captured")),
  refunded: Type.Optional(StringEnum(DEGREES, 'overview.refunded: how much of the captured amount was refunded')),
  voided: Type.Optional(StringEnum(DEGREES, 'overview.voided: how much of the authorized amount was voided')),
  order_reference: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'order.reference, exactly' })),
  partner: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Payments with a part at this partner' })),
  method: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Payments with a part paid by this method' })),
  currency: Type.Optional(StringEnum(CURRENCIES, 'Currency')),
  amount_gte: Type.Optional(AmountQuery('Amount at least this (minor units)')),
  amount_lte: Type.Optional(AmountQuery('Amount at most this (minor units)')),
  customer_email: Type.Optional(Type.String({ minLength: 3, maxLength: 254, description: 'customer.email, exactly (case does not matter)' })),
  card_last_four: Type.Optional(Type.String({ pattern: '^[0-9]{4}$', description: 'Payments with a card part ending in these four digits' })),
}, { additionalProperties: false });
export type PaymentListQueryT = Static<typeof PaymentListQuery>;

const SessionListQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(ValueList(SESSION_STATUSES, 'Status')),
}, { additionalProperties: false });

const LinkListQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(ValueList(['CREATED', 'PAID', 'CANCELLED', 'EXPIRED'], 'Status')),
}, { additionalProperties: false });

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

export async function listRoutes(root: FastifyInstance, deps: { reads: ReadRouter; payments: PaymentsService; sessions: ClientSessionsService; links: PaymentLinksService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const entity = (request: FastifyRequest) => entityOf(request);
  const lag = (request: FastifyRequest) => allowedLagMs(request.headers['cache-control'], deps.reads.defaultMaxLagMs);

  app.get('/v2/payments', {
    config: { auth: bearer },
    schema: {
      tags: ['Payments'], security, summary: "List the entity's payments",
      description: 'Newest first, cursor pagination. Each item is the Payment as stored (as GET /v2/payments/{id} with ' +
        'Cache-Control max-age: partners are not asked). Filters combine with AND; a comma list of statuses means any of them.',
      querystring: PaymentListQuery,
      headers: StaleReadHeaders,
      response: { 200: ListOf(Type.Ref('Payment'), 'PaymentList'), ...problemResponses(400, 401, 403) },
    },
  }, async (request, reply) => {
    const q = request.query;
    const req = pageRequest(q);
    const f = paymentListFilter(q);
    const texts = await deps.reads.read(lag(request), (db) => deps.payments.listStoredJson(entity(request), req, f, db));
    if (!texts) unknownCursor(q);
    const page = pageOf(texts, req);
    // The payments' JSON texts as stored, not serialized a second time.
    return reply.type('application/json; charset=utf-8').send(
      `{"object":"list","data":[${page.items.map((i) => i.text).join(',')}],"has_more":${page.has_more},"next_cursor":${JSON.stringify(page.next_cursor)}}` as never);
  });

  app.get('/v2/client-sessions', {
    config: { auth: bearer },
    schema: {
      tags: ['Client sessions'], security, summary: "List the entity's client sessions",
      description: 'Newest first, cursor pagination; each item as GET /v2/client-sessions/{id} shows it.',
      querystring: SessionListQuery,
      headers: StaleReadHeaders,
      response: { 200: ListOf(Type.Ref('ClientSession'), 'ClientSessionList'), ...problemResponses(400, 401, 403) },
    },
  }, async (request) => {
    const q = request.query;
    const req = pageRequest(q);
    const f: Filter = { where: [], params: [] };
    if (q.status) statusFilter(f, q.status.split(','), 'CREATED');
    const rows = await deps.reads.read(lag(request), (db) => listsRepo.clientSessions(db, entity(request), req, f, SESSION_COLUMNS));
    if (!rows) unknownCursor(q);
    const page = pageOf(rows, req);
    return { object: 'list' as const, data: page.items.map((r) => deps.sessions.view(r, r.payment_status ?? undefined)), has_more: page.has_more, next_cursor: page.next_cursor };
  });

  app.get('/v2/payment-links', {
    config: { auth: bearer },
    schema: {
      tags: ['Payment links'], security, summary: "List the entity's payment links",
      description: 'Newest first, cursor pagination; each item as GET /v2/payment-links/{id} shows it.',
      querystring: LinkListQuery,
      headers: StaleReadHeaders,
      response: { 200: ListOf(Type.Ref('PaymentLink'), 'PaymentLinkList'), ...problemResponses(400, 401, 403) },
    },
  }, async (request) => {
    const q = request.query;
    const req = pageRequest(q);
    const f: Filter = { where: [], params: [] };
    if (q.status) statusFilter(f, q.status.split(','), 'CREATED');
    const rows = await deps.reads.read(lag(request), (db) => listsRepo.paymentLinks(db, entity(request), req, f, LINK_COLUMNS));
    if (!rows) unknownCursor(q);
    const page = pageOf(rows, req);
    return { object: 'list' as const, data: page.items.map((r) => deps.links.view(r)), has_more: page.has_more, next_cursor: page.next_cursor };
  });
}
