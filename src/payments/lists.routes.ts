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
import { addCondition, type Filter, listsRepo, type PageRequest } from './lists.repo.ts';
import type { PaymentsService } from './payments.service.ts';
import type { ClientSessionsService } from './client-sessions.service.ts';
import { SESSION_COLUMNS, SESSION_STATUSES } from './client-sessions.repo.ts';
import type { PaymentLinksService } from '../links/links.service.ts';
import { LINK_COLUMNS } from '../links/links.repo.ts';

const bearer = { schemes: ['bearer' as const], scope: 'payment-api' };
const security = [{ bearerAuth: [] }];

/** A comma-separated list of values from a closed set (query values are strings). */
const ValueList = (values: readonly string[], description: string) =>
  Type.String({ pattern: `^(${values.join('|')})(,(${values.join('|')}))*$`, description: `${description}: one or more of ${values.join(', ')}, comma-separated` });
const AmountQuery = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]{0,14})$', description });

// (Query values are strings: payd coerces no types, so patterns carry the bounds.)
const PageQuery = {
  limit: Type.Optional(Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Page size, 1 to 100 (default 20)' })),
  starting_after: Type.Optional(Uuid('An id from the list: the page continues after it (next_cursor of the previous page)')),
  ending_before: Type.Optional(Uuid('An id from the list: the page ends just before it (going back: data[0].id of the current page)')),
  created_gte: Type.Optional(Type.String({ format: 'date-time', description: 'Only objects created at or after this time' })),
  created_lt: Type.Optional(Type.String({ format: 'date-time', description: 'Only objects created before this time' })),
};

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

const ListOf = (item: TSchema, name: string) => Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(item),
  has_more: Type.Boolean({ description: 'More objects follow in the direction of travel' }),
  next_cursor: Type.Union([Uuid(), Type.Null()], { description: 'starting_after for the next page; null when there is none (and on pages read with ending_before: go on with ending_before = data[0].id while has_more)' }),
}, { title: name });

/** Lists and events may be a little stale; the header bounds how much (platform/db/reads.ts). */
export const StaleReadHeaders = Type.Object({
  'cache-control': Type.Optional(Type.String({ maxLength: 200, description: 'How stale the list may be: max-age=<seconds>, or no-cache for the primary. ' +
    'With a read replica (DATABASE_READ_URL) a list is read from it when it is provably no staler than that, by default PAYD_READ_MAX_LAG_MS (1 s); ' +
    'else, and always without a replica, from the primary' })),
});

interface PageQueryT { limit?: string; starting_after?: string; ending_before?: string; created_gte?: string; created_lt?: string }

export function pageRequest(q: PageQueryT): PageRequest {
  if (q.starting_after && q.ending_before) throw problems.invalidField('ending_before', 'give starting_after or ending_before, not both', 'query');
  if (q.created_gte && q.created_lt && Date.parse(q.created_gte) >= Date.parse(q.created_lt)) {
    throw problems.invalidField('created_lt', 'must be later than created_gte', 'query');
  }
  return {
    limit: Number(q.limit ?? 20), after: q.starting_after, before: q.ending_before,
    createdGte: q.created_gte ? new Date(q.created_gte) : undefined, createdLt: q.created_lt ? new Date(q.created_lt) : undefined,
  };
}

function unknownCursor(q: PageQueryT): never {
  throw problems.invalidField(q.starting_after ? 'starting_after' : 'ending_before', 'is not an id of this list for this entity', 'query');
}

/** The page and its has_more/next_cursor, from limit + 1 rows in the order they were read. */
export function pageOf<T extends { id: string }>(rows: T[], req: PageRequest): { items: T[]; has_more: boolean; next_cursor: string | null } {
  const hasMore = rows.length > req.limit;
  const items = rows.slice(0, req.limit);
  if (req.before) items.reverse();
  return { items, has_more: hasMore, next_cursor: hasMore && !req.before ? items[items.length - 1]!.id : null };
}

/** Status filters of objects whose EXPIRED status is computed (CREATED past expires_at). */
function statusFilter(f: Filter, statuses: string[], expirable: string): void {
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

const DEGREE_SQL: Record<string, (part: string, whole: string) => string> = {
  NOT: (part) => `${part} <= 0`,
  PARTIALLY: (part, whole) => `(${part} > 0 AND ${part} < ${whole})`,
  FULLY: (part, whole) => `(${part} > 0 AND ${part} >= ${whole})`,
};

/** The filter of a payment list query (GET /v2/payments and the dashboard's list). */
export function paymentListFilter(q: PaymentListQueryT): Filter {
  const f: Filter = { where: [], params: [] };
  if (q.authorization_status) addCondition(f, (p) => `authorization_status = ANY(${p}::text[])`, q.authorization_status.split(','));
  if (q.captured) f.where.push(DEGREE_SQL[q.captured]!('total_captured', 'total_authorized'));
  if (q.voided) f.where.push(DEGREE_SQL[q.voided]!('total_voided', 'total_authorized'));
  if (q.refunded) f.where.push(DEGREE_SQL[q.refunded]!('total_refunded', 'total_captured'));
  if (q.order_reference) addCondition(f, (p) => `order_reference = ${p}`, q.order_reference);
  if (q.partner) addCondition(f, (p) => `split @> ${p}::jsonb`, JSON.stringify([{ partner: q.partner }]));
  if (q.method) addCondition(f, (p) => `split @> ${p}::jsonb`, JSON.stringify([{ method: q.method }]));
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
