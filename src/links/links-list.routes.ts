// GET /v2/payment-links: the entity's links, newest first, cursor pagination (the shared
// list pieces are platform/http/lists.ts; the page is read through PaymentLinksService).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { allowedLagMs, type ReadRouter } from '../platform/db/reads.ts';
import { problemResponses } from '../platform/http/schemas.ts';
import { ListOf, PageQuery, pageOf, pageRequest, StaleReadHeaders, unknownCursor, ValueList } from '../platform/http/lists.ts';
import type { PaymentLinksService } from './links.service.ts';

const bearer = { schemes: ['bearer' as const], scope: 'payment-api' };
const security = [{ bearerAuth: [] }];

const LinkListQuery = Type.Object({
  ...PageQuery,
  status: Type.Optional(ValueList(['CREATED', 'PAID', 'CANCELLED', 'EXPIRED'], 'Status')),
}, { additionalProperties: false });

export async function linkListRoutes(root: FastifyInstance, deps: { reads: ReadRouter; links: PaymentLinksService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const entity = (request: FastifyRequest) => entityOf(request);
  const lag = (request: FastifyRequest) => allowedLagMs(request.headers['cache-control'], deps.reads.defaultMaxLagMs);

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
    const rows = await deps.reads.read(lag(request), (db) => deps.links.list(db, entity(request), req, q.status?.split(',')));
    if (!rows) unknownCursor(q);
    const page = pageOf(rows, req);
    return { object: 'list' as const, data: page.items.map((r) => deps.links.view(r)), has_more: page.has_more, next_cursor: page.next_cursor };
  });
}
