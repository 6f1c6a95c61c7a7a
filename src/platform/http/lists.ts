// The shared pieces of the API's lists (payments, sessions, links, events): the page query,
// the list answer, the stale-read header, and keyset pages read as limit + 1 rows.
import { Type, type TSchema } from 'typebox';
import { problems } from './problem.ts';
import { Uuid } from './schemas.ts';

/** A page of a keyset list: limit rows after or before a cursor, within a creation window. */
export interface PageRequest {
  limit: number;
  /** Rows after this id in the listing order. */
  after?: string | undefined;
  /** Rows before this id in the listing order. */
  before?: string | undefined;
  createdGte?: Date | undefined;
  createdLt?: Date | undefined;
}

/** A comma-separated list of values from a closed set (query values are strings). */
export const ValueList = (values: readonly string[], description: string) =>
  Type.String({ pattern: `^(${values.join('|')})(,(${values.join('|')}))*$`, description: `${description}: one or more of ${values.join(', ')}, comma-separated` });

// (Query values are strings: payd coerces no types, so patterns carry the bounds.)
export const PageQuery = {
  limit: Type.Optional(Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Page size, 1 to 100 (default 20)' })),
  starting_after: Type.Optional(Uuid('An id from the list: the page continues after it (next_cursor of the previous page)')),
  ending_before: Type.Optional(Uuid('An id from the list: the page ends just before it (going back: data[0].id of the current page)')),
  created_gte: Type.Optional(Type.String({ format: 'date-time', description: 'Only objects created at or after this time' })),
  created_lt: Type.Optional(Type.String({ format: 'date-time', description: 'Only objects created before this time' })),
};

export const ListOf = (item: TSchema, name: string) => Type.Object({
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

export interface PageQueryT { limit?: string; starting_after?: string; ending_before?: string; created_gte?: string; created_lt?: string }

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

export function unknownCursor(q: PageQueryT): never {
  throw problems.invalidField(q.starting_after ? 'starting_after' : 'ending_before', 'is not an id of this list for this entity', 'query');
}

/** The page and its has_more/next_cursor, from limit + 1 rows in the order they were read. */
export function pageOf<T extends { id: string }>(rows: T[], req: PageRequest): { items: T[]; has_more: boolean; next_cursor: string | null } {
  const hasMore = rows.length > req.limit;
  const items = rows.slice(0, req.limit);
  if (req.before) items.reverse();
  return { items, has_more: hasMore, next_cursor: hasMore && !req.before ? items[items.length - 1]!.id : null };
}

