// The merchant's lists: GET /v2/payments, /v2/client-sessions (GET /v2/payment-links is
// links/links-list.routes.ts).
// Cursor pagination newest first (starting_after / ending_before take an id of the
// entity's), filters as query parameters, items exactly as GET of each object shows it
// (payments: the stored data, as with Cache-Control max-age: no partner is asked).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { allowedLagMs, type ReadRouter } from '../platform/db/reads.ts';
import { problemResponses } from '../platform/http/schemas.ts';
import { ListOf, PageQuery, pageOf, pageRequest, StaleReadHeaders, unknownCursor, ValueList } from '../platform/http/lists.ts';
import { PaymentListQuery } from './lists.schemas.ts';
import { paymentListFilter } from './lists.service.ts';
import type { PaymentsService } from './payments.service.ts';
import { type ClientSessionsService, SESSION_STATUSES } from './client-sessions.service.ts';

// Kept importable from here for the dashboard's pages (they move with the src/web/ work).
export { pageOf, pageRequest, paymentListFilter, StaleReadHeaders };
export { DEGREES, type PaymentListQueryT } from './lists.schemas.ts';

const bearer = { schemes: ['bearer' as const], scope: 'payment-api' };
const security = [{ bearerAuth: [] }];

const SessionListQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(ValueList(SESSION_STATUSES, 'Status')),
}, { additionalProperties: false });

export async function listRoutes(root: FastifyInstance, deps: { reads: ReadRouter; payments: PaymentsService; sessions: ClientSessionsService }) {
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
    const texts = await deps.reads.read(lag(request), (db) => deps.payments.listStoredJson(entity(request), req, paymentListFilter(q), db));
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
    const rows = await deps.reads.read(lag(request), (db) => deps.sessions.list(db, entity(request), req, q.status?.split(',')));
    if (!rows) unknownCursor(q);
    const page = pageOf(rows, req);
    return { object: 'list' as const, data: page.items.map((r) => deps.sessions.view(r, r.payment_status ?? undefined)), has_more: page.has_more, next_cursor: page.next_cursor };
  });

}
