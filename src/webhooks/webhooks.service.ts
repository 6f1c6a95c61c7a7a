// Operator rules of webhooks: default endpoints, signing secrets, the delivery log and
// replays. No HTTP, no SQL here.
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../platform/db/index.ts';
import { problems } from '../platform/http/problem.ts';
import { type EndpointRow, type EndpointStatus, endpointsRepo } from './endpoints.repo.ts';
export type { EndpointRow } from './endpoints.repo.ts';
import { EVENT_TYPES } from './catalogue.ts';
import { type AttemptRow, type DeliveryRow, type EventFilter, type EventRow, type EventStatus, eventsRepo, type ResentDeliveryRow } from './events.repo.ts';

export type { EventStatus };
import { maskHeaders } from './header-seal.ts';
import type { RevealedSecret, WebhookSecrets } from './secrets.ts';
import { validateWebhookTarget, type WebhookHeader } from './target.ts';

/** At most this many endpoints per entity (the default one included), as Stripe's 16. */
export const MAX_ENDPOINTS_PER_ENTITY = 16;
const SUBSCRIBABLE = new Set<string>(EVENT_TYPES.map((e) => e.type));

export interface EndpointInput {
  url?: string;
  headers?: WebhookHeader[];
  description?: string | null;
  enabled_events?: string[];
  status?: EndpointStatus;
}

/** The enabled_events given, checked against the catalogue ("*": every type), without repeats. */
function checkEnabledEvents(events: string[]): string[] {
  const bad = events.flatMap((e, i) => (e === '*' || SUBSCRIBABLE.has(e) ? [] : [{ name: `enabled_events[${i}]`, in: 'body' as const, reason: `"${e}" is not an event type (docs/webhooks.md lists them) nor "*"` }]));
  if (bad.length) throw problems.invalidRequest(`The request body is invalid: ${bad.map((p) => `${p.name} ${p.reason}`).join('; ')}`, bad);
  const unique = [...new Set(events)];
  return unique.includes('*') ? ['*'] : unique;
}

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

  /**
   * Sets the default endpoint (the deprecated singular routes' one, signed with the
   * entity's secret); the response carries the secret when this call created it.
   */
  async putEndpoint(entityId: string, url: string, headers: WebhookHeader[] = []): Promise<EndpointRow & { secret?: string }> {
    const invalid = validateWebhookTarget({ url, headers }, '', { allowPrivateTargets: this.opts.allowPrivateTargets });
    if (invalid.length) {
      throw problems.invalidRequest(`The request body is invalid: ${invalid.map((p) => `${p.name} ${p.reason}`).join('; ')}`, invalid);
    }
    entityId = await this.requireEntity(entityId);
    const sealed = this.secrets.sealHeaders(entityId, headers);
    const { endpoint, created } = await this.db.transaction(async (tx) => {
      if (!(await endpointsRepo.getEndpoint(tx, entityId))) {
        // A new default endpoint counts towards the cap like any other.
        await endpointsRepo.lockEntity(tx, entityId);
        if ((await endpointsRepo.countEndpoints(tx, entityId)) >= MAX_ENDPOINTS_PER_ENTITY) {
          throw problems.conflict(`An entity has at most ${MAX_ENDPOINTS_PER_ENTITY} webhook endpoints: delete one first.`);
        }
      }
      return {
        endpoint: await endpointsRepo.upsertEndpoint(tx, entityId, randomUUID(), url, maskHeaders(headers), sealed),
        created: await this.secrets.ensure(tx, entityId),
      };
    });
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

  private checkTarget(url: string, headers: WebhookHeader[]): void {
    const invalid = validateWebhookTarget({ url, headers }, '', { allowPrivateTargets: this.opts.allowPrivateTargets });
    if (invalid.length) {
      throw problems.invalidRequest(`The request body is invalid: ${invalid.map((p) => `${p.name} ${p.reason}`).join('; ')}`, invalid);
    }
  }

  /** A new endpoint of the entity with its own secret, shown once in the answer; at most MAX_ENDPOINTS_PER_ENTITY. */
  async createEndpoint(entityId: string, input: EndpointInput & { url: string }): Promise<EndpointRow & { secret: string }> {
    const headers = input.headers ?? [];
    this.checkTarget(input.url, headers);
    const enabledEvents = checkEnabledEvents(input.enabled_events ?? ['*']);
    entityId = await this.requireEntity(entityId);
    const id = randomUUID();
    const { secret, sealed } = this.secrets.newEndpointSecret(id);
    const headersEnc = this.secrets.sealHeaders(entityId, headers);
    const endpoint = await this.db.transaction(async (tx) => {
      await endpointsRepo.lockEntity(tx, entityId);
      if ((await endpointsRepo.countEndpoints(tx, entityId)) >= MAX_ENDPOINTS_PER_ENTITY) {
        throw problems.conflict(`An entity has at most ${MAX_ENDPOINTS_PER_ENTITY} webhook endpoints: delete one first.`);
      }
      return endpointsRepo.insertEndpoint(tx, {
        id, entityId, url: input.url, headers: maskHeaders(headers), headersEnc, description: input.description ?? null,
        enabledEvents, status: input.status ?? 'enabled', secretEnc: sealed,
      });
    });
    return { ...endpoint, secret };
  }

  async listEndpoints(entityId: string, limit: number, after?: string): Promise<{ data: EndpointRow[]; has_more: boolean; next_cursor: string | null }> {
    entityId = await this.requireEntity(entityId);
    const rows = await endpointsRepo.listEndpoints(this.db, entityId, limit + 1, after);
    if (!rows) throw problems.invalidField('starting_after', 'is not a webhook endpoint of this entity', 'query');
    const data = rows.slice(0, limit).map((e) => ({ ...e, headers: maskHeaders(e.headers) }));
    const hasMore = rows.length > limit;
    return { data, has_more: hasMore, next_cursor: hasMore ? data[data.length - 1]!.id : null };
  }

  async getEndpointById(entityId: string, id: string): Promise<EndpointRow> {
    const endpoint = await endpointsRepo.endpointById(this.db, entityId, id);
    if (!endpoint) throw problems.notFound(`Webhook endpoint ${id} does not exist.`);
    return { ...endpoint, headers: maskHeaders(endpoint.headers) };
  }

  /** Changes the fields given; headers replace the whole list. */
  async updateEndpoint(entityId: string, id: string, input: EndpointInput): Promise<EndpointRow> {
    const current = await this.getEndpointById(entityId, id);
    if (input.url !== undefined || input.headers !== undefined) this.checkTarget(input.url ?? current.url, input.headers ?? []);
    const enabledEvents = input.enabled_events === undefined ? undefined : checkEnabledEvents(input.enabled_events);
    const updated = await endpointsRepo.updateEndpoint(this.db, current.entity_id, id, {
      url: input.url,
      ...(input.headers !== undefined ? { headers: maskHeaders(input.headers), headersEnc: this.secrets.sealHeaders(current.entity_id, input.headers) } : {}),
      description: input.description,
      enabledEvents,
      status: input.status,
    });
    if (!updated) throw problems.notFound(`Webhook endpoint ${id} does not exist.`);
    return { ...updated, headers: maskHeaders(updated.headers) };
  }

  async deleteEndpointById(entityId: string, id: string): Promise<void> {
    if (!(await endpointsRepo.deleteEndpointById(this.db, entityId, id))) throw problems.notFound(`Webhook endpoint ${id} does not exist.`);
  }

  async rotateEndpointSecret(entityId: string, id: string, previousSeconds: number): Promise<RevealedSecret & { endpoint_id: string; entity_id: string }> {
    const rotated = await this.secrets.rotateEndpoint(entityId, id, previousSeconds);
    if (!rotated) throw problems.notFound(`Webhook endpoint ${id} does not exist.`);
    return { entity_id: entityId, ...rotated };
  }

  /**
   * The merchant's resend of one of its events (POST /v2/events/{id}/resend): new
   * deliveries of the same event, as the operator's replay makes, to the endpoint named or
   * else wherever the event goes now. Another entity's event, or endpoint, is a 404.
   */
  async resendEvent(entityId: string, eventId: string, endpointId: string | undefined): Promise<{ event_id: string; deliveries: ResentDeliveryRow[] }> {
    const event = await eventsRepo.get(this.db, entityId, eventId);
    if (!event) throw problems.notFound('No such event.');
    if (endpointId !== undefined) {
      await this.getEndpointById(entityId, endpointId); // another entity's endpoint: 404
      if (event.url !== null) {
        throw problems.invalidField('webhook_endpoint_id', 'the event goes to a URL of its own (its payment link\'s webhook.url), not to an endpoint: resend it without webhook_endpoint_id', 'body');
      }
    }
    const deliveries = await this.db.transaction((tx) => eventsRepo.insertReplay(tx, entityId, eventId, randomUUID(), endpointId ?? null));
    if (deliveries.length === 0) {
      throw problems.conflict('The event has no destination: it has no URL of its own and no enabled webhook endpoint of the entity takes its type. Add one (POST /v2/webhook-endpoints) or name one (webhook_endpoint_id).');
    }
    return { event_id: eventId, deliveries };
  }

  /** Sends a test event (type webhook_endpoint.test) to this endpoint only, whatever its enabled_events and status. */
  async sendTestEvent(entityId: string, id: string): Promise<{ id: string; type: 'webhook_endpoint.test'; endpoint_id: string; delivery_id: string }> {
    const endpoint = await this.getEndpointById(entityId, id);
    const eventId = randomUUID();
    const deliveryId = randomUUID();
    await this.db.transaction((tx) => eventsRepo.insertTestEvent(tx, endpoint.entity_id, endpoint.id, eventId, deliveryId, {
      endpoint_id: endpoint.id, url: endpoint.url, message: 'A test event sent by POST /v2/webhook-endpoints/{id}/test.',
    }));
    return { id: eventId, type: 'webhook_endpoint.test', endpoint_id: endpoint.id, delivery_id: deliveryId };
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
      const first = (await eventsRepo.insertReplay(tx, entityId, eventId, randomUUID()))[0];
      const delivery = first && (await eventsRepo.delivery(tx, first.id));
      if (!delivery) {
        throw problems.conflict('The event has no destination: it has no URL of its own and no enabled webhook endpoint of the entity takes its type. Add one (POST /v2/webhook-endpoints, or PUT /admin/v1/entities/{id}/webhook-endpoint) first.');
      }
      return deliveryView(delivery);
    });
  }
}
