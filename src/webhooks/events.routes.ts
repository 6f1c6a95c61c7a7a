// The merchant's events API: the payment and payment-link events payd wrote to its
// outbox, read back with the payment API's credentials. A merchant catches up after
// downtime without webhooks, and `payd listen` forwards them to a local receiver.
// Each item is exactly the body a webhook call carries for that event.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { entityOf } from '../platform/http/auth.ts';
import { allowedLagMs, type ReadRouter } from '../platform/db/reads.ts';
import { StaleReadHeaders } from '../platform/http/lists.ts';
import { problems } from '../platform/http/problem.ts';
import { IdParams, NoBody, problemResponses, StringEnum, Uuid } from '../platform/http/schemas.ts';
import { EVENT_TYPES } from './catalogue.ts';
import { merchantEvents, type MerchantEventRow } from './events.service.ts';

const bearer = { schemes: ['bearer' as const], scope: 'payment-api' };
const KNOWN_TYPES = new Set<string>(EVENT_TYPES.map((e) => e.type));
const tags = ['Events'];
const security = [{ bearerAuth: [] }];

const TypeList = Type.String({ minLength: 1, maxLength: 1000, pattern: '^[a-z_.]+(,[a-z_.]+)*$' });

const EventListQuery = Type.Object(
  {
    // (Query values are strings: payd coerces no types, so the pattern carries the bounds.)
    limit: Type.Optional(Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Page size, 1 to 100 (default 20)' })),
    order: Type.Optional(StringEnum(['desc', 'asc'], 'desc (default): newest first. asc: oldest first, to catch up from a point')),
    starting_after: Type.Optional(Uuid('An event id: the page continues after it, in the listing order (next_cursor of the previous page)')),
    ending_before: Type.Optional(Uuid('An event id: the page ends just before it, in the listing order (going back a page)')),
    type: Type.Optional(Type.Union([TypeList, Type.Array(TypeList, { minItems: 1, maxItems: 20 })], {
      description: 'Only events of these types: one, several separated by commas (type=payment.captured,payment.refunded), ' +
        `or the parameter repeated (type=payment.captured&type=payment.refunded). Types: ${EVENT_TYPES.map((e) => e.type).join(', ')}`,
    })),
    created_gte: Type.Optional(Type.String({ format: 'date-time', description: 'Only events created at or after this time' })),
    created_lt: Type.Optional(Type.String({ format: 'date-time', description: 'Only events created before this time' })),
  },
  { additionalProperties: false },
);

const EventList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(Type.Ref('Event')),
  has_more: Type.Boolean({ description: 'More events follow in the listing order' }),
  next_cursor: Type.Union([Uuid(), Type.Null()], { description: 'starting_after for the next page; null when there is none (and on pages read with ending_before: go on with ending_before = data[0].id while has_more)' }),
});

function eventJson(e: MerchantEventRow) {
  return { id: e.id, type: e.type, created_at: e.created_at.toISOString(), entity_id: e.entity_id, data: e.data };
}

export async function merchantEventsRoutes(root: FastifyInstance, { reads }: { reads: ReadRouter }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/v2/events', {
    config: { auth: bearer },
    schema: {
      tags, security, summary: "List the entity's events",
      description: 'The events payd sent (or would send) as webhooks, each exactly as its webhook body. ' +
        'Cursor pagination in (created_at, id) order: newest first by default, `order=asc` to catch up oldest first. ' +
        'An event appears when the change it describes commits, which can be a moment after its created_at: ' +
        'a client catching up should start a little before the last event it has seen (created_gte a minute earlier) ' +
        'and skip the ids it already has, as it does for webhooks (delivery is at least once).',
      querystring: EventListQuery,
      headers: StaleReadHeaders,
      response: { 200: EventList, ...problemResponses(400, 401, 403) },
    },
  }, async (request) => {
    const q = request.query;
    if (q.starting_after && q.ending_before) throw problems.invalidField('ending_before', 'give starting_after or ending_before, not both', 'query');
    const limit = Number(q.limit ?? 20);
    const types = q.type === undefined ? undefined : [...new Set([q.type].flat().flatMap((t) => t.split(',')))];
    const unknown = types?.find((x) => !KNOWN_TYPES.has(x));
    if (unknown) throw problems.invalidField('type', `"${unknown}" is not an event type (docs/webhooks.md lists them)`, 'query');
    const rows = await reads.read(allowedLagMs(request.headers['cache-control'], reads.defaultMaxLagMs), (db) => merchantEvents.page(db, entityOf(request), {
      limit, order: q.order ?? 'desc', types,
      createdGte: q.created_gte ? new Date(q.created_gte) : undefined,
      createdLt: q.created_lt ? new Date(q.created_lt) : undefined,
      after: q.starting_after, before: q.ending_before,
    }));
    if (!rows) {
      const name = q.starting_after ? 'starting_after' : 'ending_before';
      throw problems.invalidField(name, 'is not an event of this entity', 'query');
    }
    const hasMore = rows.length > limit;
    const page = rows.slice(0, limit);
    if (q.ending_before) page.reverse();
    const data = page.map(eventJson);
    // has_more speaks of the direction of travel: going back (ending_before), of events
    // before this page, reached with ending_before = data[0].id.
    return { object: 'list' as const, data, has_more: hasMore, next_cursor: hasMore && !q.ending_before ? data[data.length - 1]!.id : null };
  });

  app.get('/v2/events/:id', {
    config: { auth: bearer },
    schema: {
      tags, security, summary: 'Get an event',
      description: 'The event exactly as its webhook body.',
      params: IdParams,
      headers: StaleReadHeaders,
      response: { 200: Type.Ref('Event'), 404: NoBody('No such event for this entity (no body)'), ...problemResponses(400, 401, 403) },
    },
  }, async (request) => {
    const e = await reads.read(allowedLagMs(request.headers['cache-control'], reads.defaultMaxLagMs), (db) => merchantEvents.one(db, entityOf(request), request.params.id));
    if (!e) throw problems.notFoundNoBody();
    return eventJson(e);
  });
}
