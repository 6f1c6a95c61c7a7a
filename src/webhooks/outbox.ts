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
//       data: eventData,                                // a JSON snapshot of what changed, bounded in size
//       url: link?.webhook?.url,                        // a link's own webhook, if any...
//       headers: link?.webhook?.headers,                // ...[{ name, values: [...] }] (masked)
//       headersEnc: link?.webhook?.headers_enc,         // ...and their sealed values
//     });                                               // without url: the entity's default endpoint
//   });
//
// - Keep `data` bounded: the object's summary and what changed, not a history that grows
//   (a payment event carries the payment summary and one operation: PaymentEventData in
//   src/payments/payments.schemas.ts), since every event is stored and sent.
// - Pass the transaction (`tx`), never the Db: outside a transaction the event could
//   exist without the change, or the change without the event.
// - Validate a link's webhook when the link is created (validateWebhookTarget(body.webhook,
//   'webhook.') gives invalid_params for a 400); enqueueEvent refuses an invalid target
//   with the same 400 Problem, which rolls the caller's transaction back.
// - Without url, the event goes to every enabled endpoint of the entity whose
//   enabled_events match its type (one delivery each, to that endpoint as set at each
//   attempt); when none matches at this moment, the event is kept (visible to the
//   operator, replayable later) but not sent.
// - Events are signed with their endpoint's own secret; the default endpoint and a
//   link's own url with the entity's secret (payd-signature).
import type { EventTypeName } from './catalogue.ts';
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../platform/db/index.ts';
import { problems } from '../platform/http/problem.ts';
import { currentTraceparent } from '../platform/observability/tracing.ts';
import { HEADER_MASK, maskHeaders } from './header-seal.ts';
import { validateWebhookTarget, type WebhookHeader } from './target.ts';
import { eventCtesSql, outboxRepo } from './outbox.repo.ts';

/** Event types are dotted lower-case names: "payment.captured", "payment_link.paid". */
export const EVENT_TYPE_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;

export interface NewEvent {
  entityId: string;
  type: EventTypeName;
  /** JSON snapshot of the object the event is about (sent as the envelope's `data`), or its JSON text. */
  data: Record<string, unknown> | string;
  /** The event's own target (a payment link's webhook.url); absent: the entity's endpoint. */
  url?: string | null | undefined;
  /** Extra headers for the event's own target (a link's webhook.headers): names, values masked. */
  headers?: WebhookHeader[] | null | undefined;
  /**
   * Their real values, sealed (a link's webhook.headers_enc, see header-seal.ts). The
   * outbox has no key: a caller with plain values seals them first
   * (WebhookSecrets.sealHeaders); `headers` is then stored masked.
   */
  headersEnc?: string | null | undefined;
  /** The event id (default: a new UUID). */
  id?: string;
  /** The id of the object the event is about (a payment, a payment link), for its page's delivery log. */
  subjectId?: string | null | undefined;
}

export interface EnqueuedEvent {
  id: string;
  /** The first delivery, or null when the event has no destination. */
  deliveryId: string | null;
}

/**
 * The event and its first delivery as two CTEs (`ev`, `evd`) of a caller's statement,
 * written only when the CTE or table named by `gate` yields a row (the change the event
 * is about). Parameters are numbered from `first`.
 */
export function eventCtes(event: NewEvent, first: number, gate: string): { sql: string; params: unknown[]; id: string } {
  const { id, params } = eventParams(event);
  return { id, sql: eventCtesSql(first, gate), params };
}

/** The parameters of an event's CTEs (eventCtes; outbox.repo.ts numbers them), once its type and target are checked. */
function eventParams(event: NewEvent): { params: unknown[]; id: string } {
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
  const headersEnc = url === null ? null : (event.headersEnc ?? null);
  // Plain values come only from a link written by a payd older than migration 0014 and
  // not yet sealed by the start-up sweep (a rolling upgrade): they are kept as given, so
  // that the change the event is about still commits, and sealed at the next start.
  const storedHeaders = headersEnc === null && headers.some((h) => h.values.some((v) => v !== HEADER_MASK)) ? headers : maskHeaders(headers);
  const id = event.id ?? randomUUID();
  return {
    id,
    // The trace of the work that writes the event (null when tracing is off): its delivery continues it.
    params: [id, event.entityId, event.type, typeof event.data === 'string' ? event.data : JSON.stringify(event.data), url, JSON.stringify(storedHeaders), randomUUID(), headersEnc, event.subjectId ?? null, currentTraceparent()],
  };
}

/** Records an event and its first delivery in one INSERT statement, on the caller's transaction. */
export async function enqueueEvent(q: Queryable, event: NewEvent): Promise<EnqueuedEvent> {
  const { params } = eventParams(event);
  const { rows } = await outboxRepo.insertEvent(q, params);
  return { id: rows[0]!.id, deliveryId: rows[0]!.delivery_id };
}
