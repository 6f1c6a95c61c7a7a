// The transactional outbox: other modules record an event INSIDE the transaction that
// makes the change the event describes, so the event exists if and only if the change
// committed. The dispatcher (worker role) delivers it afterwards, at least once.
//
// How to call it (payments, payment links):
//
//   await db.transaction(async (tx) => {
//     ...lock the payment row, record the capture...
//     await enqueueEvent(tx, {
//       entityId: payment.entity_id,
//       type: 'payment.captured',
//       data: paymentView,                              // a JSON snapshot, as the API shows it
//       url: link?.webhook?.url,                        // a link's own webhook, if any...
//       headers: link?.webhook?.headers,                // ...[{ name, values: [...] }]
//     });                                               // without url: the entity's default endpoint
//   });
//
// - Pass the transaction (`tx`), never the Db: outside a transaction the event could
//   exist without the change, or the change without the event.
// - Validate a link's webhook when the link is created (validateWebhookTarget(body.webhook,
//   'webhook.') gives invalid_params for a 400); enqueueEvent refuses an invalid target
//   with the same 400 Problem, which rolls the caller's transaction back.
// - Without url, the event goes to the entity's default endpoint (PUT
//   /admin/v1/entities/{id}/webhook-endpoint), as set at each attempt; when the entity
//   has none at this moment, the event is kept (visible to the operator, replayable
//   later) but not sent.
// - Events are signed with the entity's secret (payd-signature) whatever the target.
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../platform/db/index.ts';
import { problems } from '../platform/http/problem.ts';
import { validateWebhookTarget, type WebhookHeader } from './target.ts';

/** Event types are dotted lower-case names: "payment.captured", "payment_link.paid". */
export const EVENT_TYPE_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;

export interface NewEvent {
  entityId: string;
  type: string;
  /** JSON snapshot of the object the event is about (sent as the envelope's `data`). */
  data: Record<string, unknown>;
  /** The event's own target (a payment link's webhook.url); absent: the entity's endpoint. */
  url?: string | null | undefined;
  /** Extra headers for the event's own target (a link's webhook.headers). */
  headers?: WebhookHeader[] | null | undefined;
  /** The event id (default: a new UUID). */
  id?: string;
}

export interface EnqueuedEvent {
  id: string;
  /** The first delivery, or null when the event has no destination. */
  deliveryId: string | null;
}

/** Records an event and its first delivery in one INSERT statement, on the caller's transaction. */
export async function enqueueEvent(q: Queryable, event: NewEvent): Promise<EnqueuedEvent> {
  if (!EVENT_TYPE_PATTERN.test(event.type) || event.type.length > 100) {
    throw new TypeError(`webhook event type must look like "payment.captured", got "${event.type}"`);
  }
  const url = event.url ?? null;
  const headers = url === null ? [] : (event.headers ?? []);
  if (url !== null) {
    const invalid = validateWebhookTarget({ url, headers }, 'webhook.');
    if (invalid.length) {
      throw problems.invalidRequest(`The webhook is invalid: ${invalid.map((p) => `${p.name} ${p.reason}`).join('; ')}`, invalid);
    }
  }
  const id = event.id ?? randomUUID();
  const { rows } = await q.query<{ id: string; delivery_id: string | null }>(
    `WITH e AS (
       INSERT INTO webhook_events (id, entity_id, type, data, url, headers, created_at)
       VALUES ($1, $2, $3, $4::jsonb, $5, $6::jsonb, clock_timestamp())
       RETURNING id, entity_id, url, created_at
     ), d AS (
       INSERT INTO webhook_deliveries (id, event_id, entity_id, reason, next_attempt_at, created_at, updated_at)
       SELECT $7, e.id, e.entity_id, 'EVENT', e.created_at, e.created_at, e.created_at
         FROM e
        WHERE e.url IS NOT NULL OR EXISTS (SELECT 1 FROM webhook_endpoints ep WHERE ep.entity_id = e.entity_id)
       RETURNING id
     )
     SELECT e.id, (SELECT id FROM d) AS delivery_id FROM e`,
    [id, event.entityId, event.type, JSON.stringify(event.data), url, JSON.stringify(headers), randomUUID()],
  );
  return { id: rows[0]!.id, deliveryId: rows[0]!.delivery_id };
}
