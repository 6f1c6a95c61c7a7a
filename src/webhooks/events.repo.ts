// SQL of the delivery log as the operator reads it: events, deliveries, attempts; replay.
import { customPlan, type Queryable } from '../platform/db/index.ts';
import { fanOutSql } from './outbox.repo.ts';
import type { DeliveryStatus } from './deliveries.repo.ts';
import type { WebhookHeader } from './target.ts';

export type EventStatus = DeliveryStatus | 'NO_DESTINATION';

export interface EventRow {
  id: string;
  entity_id: string;
  type: string;
  data: unknown;
  url: string | null;
  created_at: Date;
  /** Status of the newest delivery, or NO_DESTINATION when there is none. */
  status: EventStatus;
}

/** A delivery just written by a resend, as the merchant API shows it. */
export interface ResentDeliveryRow {
  id: string;
  endpoint_id: string | null;
  url: string | null;
  status: DeliveryStatus;
  created_at: Date;
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  reason: 'EVENT' | 'REPLAY';
  /** Where the next attempt goes: the event's url, else the entity's endpoint now (null: neither). */
  url: string | null;
  headers: WebhookHeader[];
  status: DeliveryStatus;
  attempt_count: number;
  next_attempt_at: Date;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
}

export interface AttemptRow {
  delivery_id: string;
  attempt_number: number;
  url: string | null;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  response_body: string | null;
}

export interface EventFilter {
  type?: string | undefined;
  status?: EventStatus | undefined;
  /** Id of the last event of the previous page (newest first). */
  after?: string | undefined;
}

export interface MerchantEventQuery {
  limit: number;
  order: 'asc' | 'desc';
  /** Only events of these types. */
  types?: string[] | undefined;
  createdGte?: Date | undefined;
  createdLt?: Date | undefined;
  after?: string | undefined;
  before?: string | undefined;
}

export type MerchantEventRow = Pick<EventRow, 'id' | 'entity_id' | 'type' | 'data' | 'created_at'>;

const EVENT_SELECT = `SELECT e.id, e.entity_id, e.type, e.data, e.url, e.created_at, coalesce(d.status, 'NO_DESTINATION') AS status
  FROM webhook_events e
  LEFT JOIN LATERAL (
    SELECT status FROM webhook_deliveries WHERE event_id = e.id ORDER BY created_at DESC, id DESC LIMIT 1
  ) d ON true`;

const DELIVERY_SELECT = `SELECT d.id, d.event_id, d.reason, coalesce(e.url, ep.url) AS url,
    CASE WHEN e.url IS NOT NULL THEN e.headers ELSE coalesce(ep.headers, '[]'::jsonb) END AS headers,
    d.status, d.attempt_count, d.next_attempt_at, d.last_status_code, d.last_error, d.delivered_at, d.created_at
  FROM webhook_deliveries d
  JOIN webhook_events e ON e.id = d.event_id
  LEFT JOIN LATERAL (
    SELECT ep.url, ep.headers FROM webhook_endpoints ep
     WHERE e.url IS NULL AND ep.entity_id = e.entity_id
       AND ((d.endpoint_id IS NULL AND ep.is_default) OR ep.id = d.endpoint_id)
  ) ep ON true`;

export const eventsRepo = {
  /** A page of an entity's events, newest first. */
  async list(q: Queryable, entityId: string, limit: number, f: EventFilter): Promise<EventRow[]> {
    const params: unknown[] = [entityId, limit];
    const where = ['e.entity_id = $1'];
    if (f.type !== undefined) where.push(`e.type = $${params.push(f.type)}`);
    if (f.status !== undefined) {
      const s = params.push(f.status);
      where.push(`coalesce(d.status, 'NO_DESTINATION') = $${s}`);
      // (Implied by the newest delivery's status, and indexed by migration 0048: a rare
      // status reads its few deliveries instead of every event's newest one.)
      if (f.status !== 'NO_DESTINATION') {
        where.push(`EXISTS (SELECT 1 FROM webhook_deliveries x WHERE x.event_id = e.id AND x.entity_id = $1 AND x.status = $${s})`);
      }
    }
    if (f.after !== undefined) {
      const p = params.push(f.after);
      where.push(`(e.created_at, e.id) < (SELECT created_at, id FROM webhook_events WHERE id = $${p} AND entity_id = $1)`);
    }
    const { rows } = await q.query<EventRow>(customPlan(
      `${EVENT_SELECT} WHERE ${where.join(' AND ')} ORDER BY e.created_at DESC, e.id DESC LIMIT $2`),
      params,
    );
    return rows;
  },

  /** The events about one object (a payment, a link), oldest first (migration 0029's index). */
  async ofSubject(q: Queryable, entityId: string, subjectId: string, limit: number): Promise<EventRow[]> {
    const { rows } = await q.query<EventRow>(
      `${EVENT_SELECT} WHERE e.entity_id = $1 AND e.subject_id = $2 ORDER BY e.created_at, e.id LIMIT $3`,
      [entityId, subjectId, limit],
    );
    return rows;
  },

  async get(q: Queryable, entityId: string, eventId: string): Promise<EventRow | undefined> {
    const { rows } = await q.query<EventRow>(`${EVENT_SELECT} WHERE e.id = $1 AND e.entity_id = $2`, [eventId, entityId]);
    return rows[0];
  },

  async deliveriesOf(q: Queryable, eventIds: string[]): Promise<DeliveryRow[]> {
    if (eventIds.length === 0) return [];
    const { rows } = await q.query<DeliveryRow>(
      `${DELIVERY_SELECT} WHERE d.event_id = ANY($1::uuid[]) ORDER BY d.created_at, d.id`,
      [eventIds],
    );
    return rows;
  },

  async attemptsOf(q: Queryable, deliveryIds: string[]): Promise<AttemptRow[]> {
    if (deliveryIds.length === 0) return [];
    const { rows } = await q.query<AttemptRow>(
      `SELECT delivery_id, attempt_number, url, started_at, duration_ms, status_code, error, response_body
         FROM webhook_attempts WHERE delivery_id = ANY($1::uuid[]) ORDER BY started_at, attempt_number`,
      [deliveryIds],
    );
    return rows;
  },

  /**
   * New deliveries of one of the entity's events (reason REPLAY, due now): to the endpoint
   * named, or else where the event goes now (its own url, or each enabled endpoint of the
   * entity whose enabled_events match it). The operator's replay and the merchant's resend
   * both make them here. The first destination's delivery comes first (its id is
   * `firstId`); none when the event is not the entity's or has no destination.
   */
  async insertReplay(q: Queryable, entityId: string, eventId: string, firstId: string, endpointId: string | null = null): Promise<ResentDeliveryRow[]> {
    const { rows } = await q.query<ResentDeliveryRow>(
      `WITH ins AS (
         INSERT INTO webhook_deliveries (id, event_id, entity_id, endpoint_id, reason)
         SELECT CASE WHEN t.n = 1 THEN $3::uuid ELSE gen_random_uuid() END, e.id, e.entity_id, t.endpoint_id, 'REPLAY'
           FROM webhook_events e,
                LATERAL (SELECT $4::uuid AS endpoint_id, 1 AS n WHERE $4::uuid IS NOT NULL
                         UNION ALL SELECT f.endpoint_id, f.n FROM (${fanOutSql('e')}) f WHERE $4::uuid IS NULL) t
          WHERE e.id = $1 AND e.entity_id = $2
         RETURNING id, event_id, endpoint_id, status, created_at
       )
       SELECT ins.id, ins.endpoint_id, coalesce(e.url, ep.url) AS url, ins.status, ins.created_at
         FROM ins JOIN webhook_events e ON e.id = ins.event_id
         LEFT JOIN webhook_endpoints ep ON ep.id = ins.endpoint_id
        ORDER BY ins.id = $3::uuid DESC, ins.created_at, ins.id`,
      [eventId, entityId, firstId, endpointId],
    );
    return rows;
  },

  /** A test event of an endpoint and its one delivery, to that endpoint only. */
  async insertTestEvent(q: Queryable, entityId: string, endpointId: string, eventId: string, deliveryId: string, data: unknown): Promise<void> {
    await q.query(
      `WITH ev AS (
         INSERT INTO webhook_events (id, entity_id, type, data, created_at) VALUES ($1, $2, 'webhook_endpoint.test', $3::jsonb, clock_timestamp())
         RETURNING id, entity_id, created_at
       )
       INSERT INTO webhook_deliveries (id, event_id, entity_id, endpoint_id, reason, next_attempt_at, created_at, updated_at)
       SELECT $4, ev.id, ev.entity_id, $5, 'EVENT', ev.created_at, ev.created_at, ev.created_at FROM ev`,
      [eventId, entityId, JSON.stringify(data), deliveryId, endpointId],
    );
  },

  /**
   * A page of an entity's events for the merchant events API, in `order` of (created_at,
   * id), limit + 1 rows (the caller tells has_more from the extra one). `after`: rows past
   * this event in that order; `before`: rows before it (read in the opposite order, the
   * caller reverses them). undefined when the cursor event is not the entity's.
   */
  async page(q: Queryable, entityId: string, p: MerchantEventQuery): Promise<MerchantEventRow[] | undefined> {
    const params: unknown[] = [entityId, p.limit + 1];
    const where = ['entity_id = $1'];
    // One type: an equality, so that its index (migration 0048) gives the listing order.
    if (p.types?.length === 1) where.push(`type = $${params.push(p.types[0])}`);
    else if (p.types !== undefined) where.push(`type = ANY($${params.push(p.types)}::text[])`);
    if (p.createdGte !== undefined) where.push(`created_at >= $${params.push(p.createdGte)}`);
    if (p.createdLt !== undefined) where.push(`created_at < $${params.push(p.createdLt)}`);
    const cursor = p.after ?? p.before;
    // Reading backwards (ending_before) runs the opposite order.
    const ascending = (p.order === 'asc') !== (p.before !== undefined);
    if (cursor !== undefined) {
      const { rows } = await q.query<{ created_at: Date }>('SELECT created_at FROM webhook_events WHERE id = $1 AND entity_id = $2', [cursor, entityId]);
      if (!rows[0]) return undefined;
      const c = params.push(cursor);
      where.push(`(created_at, id) ${ascending ? '>' : '<'} (SELECT created_at, id FROM webhook_events WHERE id = $${c})`);
    }
    const dir = ascending ? 'ASC' : 'DESC';
    // Planned for its values (customPlan): a rare type reads its own index.
    const { rows } = await q.query<MerchantEventRow>(customPlan(
      `SELECT id, entity_id, type, data, created_at FROM webhook_events
        WHERE ${where.join(' AND ')} ORDER BY created_at ${dir}, id ${dir} LIMIT $2`),
      params,
    );
    return rows;
  },

  async one(q: Queryable, entityId: string, eventId: string): Promise<MerchantEventRow | undefined> {
    const { rows } = await q.query<MerchantEventRow>(
      'SELECT id, entity_id, type, data, created_at FROM webhook_events WHERE id = $1 AND entity_id = $2', [eventId, entityId]);
    return rows[0];
  },

  async delivery(q: Queryable, deliveryId: string): Promise<DeliveryRow | undefined> {
    const { rows } = await q.query<DeliveryRow>(`${DELIVERY_SELECT} WHERE d.id = $1`, [deliveryId]);
    return rows[0];
  },
};
