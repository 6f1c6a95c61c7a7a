// The merchant's events read back (GET /v2/events): the routes' way to the events
// repository (a route reaches a repository only through a service).
import type { Queryable } from '../platform/db/index.ts';
import { eventsRepo, type MerchantEventQuery, type MerchantEventRow } from './events.repo.ts';

export type { MerchantEventRow };

export const merchantEvents = {
  /** A page of the entity's events; undefined: the cursor is not one of the entity's events. */
  page: (q: Queryable, entityId: string, p: MerchantEventQuery): Promise<MerchantEventRow[] | undefined> => eventsRepo.page(q, entityId, p),
  /** One of the entity's events (another entity's is undefined: a 404). */
  one: (q: Queryable, entityId: string, eventId: string): Promise<MerchantEventRow | undefined> => eventsRepo.one(q, entityId, eventId),
};
