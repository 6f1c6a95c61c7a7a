// Webhook events of payment changes, written by the transaction that makes the change
// (transactional outbox, src/webhooks/outbox.ts). A payment of a payment link goes to
// the link's webhook; any other to the entity's endpoint.
//
// An event's data is the payment's summary as the change leaves it plus what changed:
// the authorization (authorization events) or the one operation (operation events),
// never the lists of earlier operations (PaymentEventData in payments.schemas.ts), so
// its size does not depend on how many operations the payment had before.
import type { EventTypeName } from '../webhooks/catalogue.ts';
import { operationOf } from './transitions.ts';
import type { Queryable } from '../platform/db/index.ts';
import { paymentEventsRepo } from './payment-events.repo.ts';
import type { NewEvent } from '../webhooks/outbox.ts';
import type { OperationKind, OperationRow, PaymentRow } from './payments.repo.ts';
import { type AuthorizationStatus, unreachable } from './common.schemas.ts';
import { paymentEventJson } from './payment-json.ts';
import type { PaymentEventDataT } from './payments.schemas.ts';
import type { PaymentViewT } from './payments.service.ts';

const DONE = { CAPTURE: 'captured', REFUND: 'refunded', VOID: 'voided' } as const satisfies Record<OperationKind, string>;

/** payment.captured, payment.capture_failed, payment.capture_conflict, ... for a settled operation. */
export function operationEventType(o: Pick<OperationRow, 'kind' | 'status'>): EventTypeName | undefined {
  const kind = operationOf(o.kind);
  switch (o.status) {
    case 'SUCCESS': return `payment.${DONE[o.kind]}`;
    case 'FAILURE': return `payment.${kind}_failed`;
    case 'CONFLICT': return `payment.${kind}_conflict`;
    case 'PENDING': return undefined;
    default: return unreachable(o.status);
  }
}

export function authorizationEventType(status: AuthorizationStatus): EventTypeName | undefined {
  switch (status) {
    case 'AUTHORIZED': return 'payment.authorized';
    case 'REFUSED': return 'payment.refused';
    case 'ERROR': return 'payment.failed';
    case 'PENDING': return undefined;
    default: return unreachable(status);
  }
}

type EventPayment = Pick<PaymentRow, 'entity_id' | 'client_session_id'>;

async function linkWebhook(q: Queryable, p: EventPayment) {
  if (!p.client_session_id) return undefined;
  const { rows } = await paymentEventsRepo.linkWebhook(q, p.client_session_id);
  return rows[0]?.webhook ?? undefined;
}

/** One event to write: its type, and for an operation's event the operation's id. */
export interface PaymentEventSpec {
  type: EventTypeName;
  operationId?: string;
}

/**
 * The data of a payment event, from the view of the payment as the change leaves it:
 * the summary, plus the authorization with its partner transactions (no operationId) or
 * the one operation named (with its partner transactions).
 */
export function paymentEventData(view: PaymentViewT, operationId?: string): PaymentEventDataT {
  const a = view.authorization;
  const data: PaymentEventDataT = {
    id: view.id, created_at: view.created_at as unknown as string, version: view.version, entity_id: view.entity_id,
    amount: view.amount, currency: view.currency, allow_future_usage: view.allow_future_usage,
    ...(view.client_session_id ? { client_session_id: view.client_session_id } : {}),
    ...(view.order_reference ? { order_reference: view.order_reference } : {}),
    capture_mode: view.capture_mode as PaymentEventDataT['capture_mode'], amounts: view.amounts, overview: view.overview, split: view.split,
    authorization: operationId
      ? { status: a.status, ...(a.redirection ? { redirection: a.redirection } : {}) } as PaymentEventDataT['authorization']
      : a as unknown as PaymentEventDataT['authorization'],
    links: { self: view.links.self },
  };
  if (operationId) {
    const found = ([['CAPTURE', view.captures], ['REFUND', view.refunds], ['VOID', view.voids]] as const)
      .map(([kind, list]) => ({ kind, o: list.find((o) => o.id === operationId) }))
      .find((x) => x.o !== undefined);
    if (!found) throw new Error(`operation ${operationId} is not in the view of payment ${view.id}`);
    data.operation_id = operationId;
    data.operation = { kind: found.kind, ...found.o } as unknown as PaymentEventDataT['operation'];
  }
  return data;
}

/** The events as the outbox takes them, to write within the change's own statement or transaction. */
export async function paymentEvents(q: Queryable, p: EventPayment, view: PaymentViewT, events: PaymentEventSpec[]): Promise<NewEvent[]> {
  if (events.length === 0) return [];
  const webhook = await linkWebhook(q, p);
  return events.map((e) => ({
    entityId: p.entity_id, type: e.type, subjectId: view.id,
    data: paymentEventJson(paymentEventData(view, e.operationId)),
    url: webhook?.url ?? null, headers: webhook?.headers ?? null, headersEnc: webhook?.headers_enc ?? null,
  }));
}
