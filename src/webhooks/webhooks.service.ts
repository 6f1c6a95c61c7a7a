// Operator rules of webhooks: default endpoints, signing secrets, the delivery log and
// replays. No HTTP, no SQL here.
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../platform/db/index.ts';
import { problems } from '../platform/http/problem.ts';
import { endpointsRepo, type EndpointRow } from './endpoints.repo.ts';
import { type AttemptRow, type DeliveryRow, type EventFilter, type EventRow, eventsRepo } from './events.repo.ts';
import { maskHeaders } from './header-seal.ts';
import type { RevealedSecret, WebhookSecrets } from './secrets.ts';
import { validateWebhookTarget, type WebhookHeader } from './target.ts';

export interface DeliveryView {
  id: string;
  reason: 'EVENT' | 'REPLAY';
  url: string | null;
  header_names: string[];
  status: DeliveryRow['status'];
  attempt_count: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
  attempts?: Array<{ number: number; url: string | null; started_at: Date; duration_ms: number; status_code: number | null; error: string | null; response_body: string | null }>;
}

export interface EventView {
  id: string;
  type: string;
  entity_id: string;
  created_at: Date;
  status: EventRow['status'];
  target: 'EVENT' | 'ENTITY_ENDPOINT';
  deliveries: DeliveryView[];
  data?: unknown;
}

function deliveryView(d: DeliveryRow, attempts?: AttemptRow[]): DeliveryView {
  return {
    id: d.id,
    reason: d.reason,
    url: d.url,
    header_names: [...new Set((d.headers ?? []).map((h) => h.name))],
    status: d.status,
    attempt_count: d.attempt_count,
    next_attempt_at: d.status === 'PENDING' ? d.next_attempt_at : null,
    last_status_code: d.last_status_code,
    last_error: d.last_error,
    delivered_at: d.delivered_at,
    created_at: d.created_at,
    ...(attempts
      ? {
          attempts: attempts.map((a) => ({
            number: a.attempt_number, url: a.url, started_at: a.started_at, duration_ms: a.duration_ms,
            status_code: a.status_code, error: a.error, response_body: a.response_body,
          })),
        }
      : {}),
  };
}

function eventView(e: EventRow, deliveries: DeliveryView[]): EventView {
  return {
    id: e.id, type: e.type, entity_id: e.entity_id, created_at: e.created_at, status: e.status,
    target: e.url === null ? 'ENTITY_ENDPOINT' : 'EVENT', deliveries,
  };
}

export class WebhooksService {
  constructor(
    private readonly db: Db,
    private readonly secrets: WebhookSecrets,
    private readonly opts: { allowPrivateTargets: boolean } = { allowPrivateTargets: true },
  ) {}

  /** The entity's id as stored (what everything below binds to), or 404. */
  private async requireEntity(entityId: string): Promise<string> {
    const id = await endpointsRepo.storedEntityId(this.db, entityId);
    if (id === undefined) throw problems.notFound(`Entity ${entityId} does not exist.`);
    return id;
  }

  /** Sets the default endpoint; the response carries the secret when this call created it. */
  async putEndpoint(entityId: string, url: string, headers: WebhookHeader[] = []): Promise<EndpointRow & { secret?: string }> {
    const invalid = validateWebhookTarget({ url, headers }, '', { allowPrivateTargets: this.opts.allowPrivateTargets });
    if (invalid.length) {
      throw problems.invalidRequest(`The request body is invalid: ${invalid.map((p) => `${p.name} ${p.reason}`).join('; ')}`, invalid);
    }
    entityId = await this.requireEntity(entityId);
    const sealed = this.secrets.sealHeaders(entityId, headers);
    const { endpoint, created } = await this.db.transaction(async (tx) => ({
      endpoint: await endpointsRepo.upsertEndpoint(tx, entityId, url, maskHeaders(headers), sealed),
      created: await this.secrets.ensure(tx, entityId),
    }));
    if (!created) return endpoint;
    return { ...endpoint, secret: (await this.secrets.reveal(entityId)).secret };
  }

  async getEndpoint(entityId: string): Promise<EndpointRow> {
    entityId = await this.requireEntity(entityId);
    const endpoint = await endpointsRepo.getEndpoint(this.db, entityId);
    if (!endpoint) throw problems.notFound(`Entity ${entityId} has no webhook endpoint.`);
    return { ...endpoint, headers: maskHeaders(endpoint.headers) };
  }

  async deleteEndpoint(entityId: string): Promise<void> {
    entityId = await this.requireEntity(entityId);
    if (!(await endpointsRepo.deleteEndpoint(this.db, entityId))) {
      throw problems.notFound(`Entity ${entityId} has no webhook endpoint.`);
    }
  }

  async revealSecret(entityId: string): Promise<RevealedSecret & { entity_id: string }> {
    entityId = await this.requireEntity(entityId);
    const { created: _created, ...secret } = await this.secrets.reveal(entityId);
    return { entity_id: entityId, ...secret };
  }

  async rotateSecret(entityId: string, previousSeconds: number): Promise<RevealedSecret & { entity_id: string }> {
    entityId = await this.requireEntity(entityId);
    return { entity_id: entityId, ...(await this.secrets.rotate(entityId, previousSeconds)) };
  }

  async listEvents(entityId: string, limit: number, filter: EventFilter): Promise<{ data: EventView[]; next_cursor: string | null }> {
    entityId = await this.requireEntity(entityId);
    if (filter.after !== undefined && !(await eventsRepo.get(this.db, entityId, filter.after))) {
      throw problems.invalidField('starting_after', 'is not an event of this entity', 'query');
    }
    const rows = await eventsRepo.list(this.db, entityId, limit + 1, filter);
    const page = rows.slice(0, limit);
    const deliveries = await eventsRepo.deliveriesOf(this.db, page.map((e) => e.id));
    const data = page.map((e) => eventView(e, deliveries.filter((d) => d.event_id === e.id).map((d) => deliveryView(d))));
    return { data, next_cursor: rows.length > limit ? page[page.length - 1]!.id : null };
  }

  /** The events about one payment or link (at most 100), with their deliveries: its page's delivery log. */
  async eventsOf(entityId: string, subjectId: string): Promise<EventView[]> {
    const rows = await eventsRepo.ofSubject(this.db, entityId, subjectId, 100);
    const deliveries = await eventsRepo.deliveriesOf(this.db, rows.map((e) => e.id));
    return rows.map((e) => eventView(e, deliveries.filter((d) => d.event_id === e.id).map((d) => deliveryView(d))));
  }

  async getEvent(entityId: string, eventId: string): Promise<EventView & { data: unknown }> {
    entityId = await this.requireEntity(entityId);
    const event = await eventsRepo.get(this.db, entityId, eventId);
    if (!event) throw problems.notFound(`Event ${eventId} does not exist for entity ${entityId}.`);
    const deliveries = await eventsRepo.deliveriesOf(this.db, [event.id]);
    const attempts = await eventsRepo.attemptsOf(this.db, deliveries.map((d) => d.id));
    const views = deliveries.map((d) => deliveryView(d, attempts.filter((a) => a.delivery_id === d.id)));
    return { ...eventView(event, views), data: event.data };
  }

  /**
   * A new delivery of the same event (same id and payload), due now. With `once`, the
   * replay is written in one transaction with what `once` records (a dashboard form's key)
   * and only when that record is new: undefined then means the form was already sent.
   */
  async replay(entityId: string, eventId: string, once?: (q: Queryable) => Promise<boolean>): Promise<DeliveryView | undefined> {
    entityId = await this.requireEntity(entityId);
    if (!(await eventsRepo.get(this.db, entityId, eventId))) {
      throw problems.notFound(`Event ${eventId} does not exist for entity ${entityId}.`);
    }
    return this.db.transaction(async (tx) => {
      if (once && !(await once(tx))) return undefined;
      const id = await eventsRepo.insertReplay(tx, entityId, eventId, randomUUID());
      const delivery = id === undefined ? undefined : await eventsRepo.delivery(tx, id);
      if (!delivery) {
        throw problems.conflict('The event has no destination: it has no URL of its own and the entity has no webhook endpoint. Set one with PUT /admin/v1/entities/{id}/webhook-endpoint first.');
      }
      return deliveryView(delivery);
    });
  }
}
