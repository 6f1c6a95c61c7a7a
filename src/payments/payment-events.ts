// Webhook events of payment changes, written by the transaction that makes the change
// (transactional outbox, src/webhooks/outbox.ts). A payment of a payment link goes to
// the link's webhook; any other to the entity's endpoint.
import type { Queryable } from '../platform/db/index.ts';
import { enqueueEvent, type NewEvent } from '../webhooks/outbox.ts';
import type { OperationRow, PaymentRow } from './payments.repo.ts';
import { paymentJson, withOperationId } from './payment-json.ts';

const AUTHORIZATION_EVENTS: Record<string, string> = { AUTHORIZED: 'payment.authorized', REFUSED: 'payment.refused', ERROR: 'payment.failed' };
const DONE: Record<string, string> = { CAPTURE: 'captured', REFUND: 'refunded', VOID: 'voided' };

/** payment.captured, payment.capture_failed, payment.capture_conflict, ... for a settled operation. */
export function operationEventType(o: Pick<OperationRow, 'kind' | 'status'>): string | undefined {
  const kind = o.kind.toLowerCase();
  if (o.status === 'SUCCESS') return `payment.${DONE[o.kind]}`;
  if (o.status === 'FAILURE') return `payment.${kind}_failed`;
  if (o.status === 'CONFLICT') return `payment.${kind}_conflict`;
  return undefined;
}

export function authorizationEventType(status: string): string | undefined {
  return AUTHORIZATION_EVENTS[status];
}

async function linkWebhook(q: Queryable, p: PaymentRow) {
  if (!p.client_session_id) return undefined;
  const { rows } = await q.query<{ webhook: { url: string; headers?: Array<{ name: string; values: string[] }>; headers_enc?: string | null } | null }>(
    `SELECT l.webhook FROM client_sessions s JOIN payment_links l ON l.id = s.payment_link_id WHERE s.id = $1`, [p.client_session_id]);
  return rows[0]?.webhook ?? undefined;
}

/**
 * The events as the outbox takes them (data: the payment as the change leaves it, the
 * very JSON text the API answers with), to write within the change's own statement or
 * transaction.
 */
export async function paymentEvents(q: Queryable, p: PaymentRow, view: object,
  events: Array<{ type: string; operationId?: string }>): Promise<NewEvent[]> {
  if (events.length === 0) return [];
  const webhook = await linkWebhook(q, p);
  return events.map((e) => ({
    entityId: p.entity_id, type: e.type,
    data: e.operationId ? withOperationId(paymentJson(view), e.operationId) : paymentJson(view),
    url: webhook?.url ?? null, headers: webhook?.headers ?? null, headersEnc: webhook?.headers_enc ?? null,
  }));
}

/** One event, to write within the change's own statement. */
export async function paymentEvent(q: Queryable, p: PaymentRow, view: object, type: string, operationId?: string): Promise<NewEvent> {
  return (await paymentEvents(q, p, view, [{ type, ...(operationId ? { operationId } : {}) }]))[0]!;
}

/** Records the events on the caller's transaction. */
export async function recordPaymentEvents(q: Queryable, p: PaymentRow, view: object,
  events: Array<{ type: string; operationId?: string }>): Promise<void> {
  for (const e of await paymentEvents(q, p, view, events)) await enqueueEvent(q, e);
}
