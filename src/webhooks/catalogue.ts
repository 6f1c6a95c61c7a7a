// The webhook events payd sends, by type: what each means and the schema of its `data`.
// The OpenAPI document's `webhooks` section, the events API and `payd trigger` read it.

type OperationEventTypeName = `payment.${'captured' | 'refunded' | 'voided'}` | `payment.${'capture' | 'refund' | 'void'}_${'failed' | 'conflict'}`;

/** Every event type payd emits: a closed union, so that an event written with a type the catalogue lacks does not compile. */
export type EventTypeName = 'payment.authorized' | 'payment.refused' | 'payment.failed' | OperationEventTypeName
  | 'payment_link.paid' | 'payment_link.payment_failed' | 'payment_link.cancelled' | 'webhook_endpoint.test';

export interface EventType {
  type: EventTypeName;
  summary: string;
  /** components.schemas name of the event's `data`. */
  data: 'PaymentEventData' | 'PaymentLinkEventData' | 'WebhookEndpointTestEventData';
}

const operationEvents = (['capture', 'refund', 'void'] as const).flatMap((kind): EventType[] => {
  const done = ({ capture: 'captured', refund: 'refunded', void: 'voided' } as const)[kind];
  return [
    { type: `payment.${done}`, summary: `A ${kind} succeeded at every partner`, data: 'PaymentEventData' },
    { type: `payment.${kind}_failed`, summary: `A ${kind} was refused by every partner it went to`, data: 'PaymentEventData' },
    { type: `payment.${kind}_conflict`, summary: `A ${kind} of a split payment succeeded at some partners and failed at others`, data: 'PaymentEventData' },
  ];
});

export const EVENT_TYPES: readonly EventType[] = [
  { type: 'payment.authorized', summary: 'A payment was authorized (every part of its split)', data: 'PaymentEventData' },
  { type: 'payment.refused', summary: 'A payment was refused (a partner declined; parts already authorized were voided)', data: 'PaymentEventData' },
  { type: 'payment.failed', summary: 'A payment ended in ERROR (no partner refused, one failed)', data: 'PaymentEventData' },
  ...operationEvents,
  { type: 'payment_link.paid', summary: 'A payment of the link was authorized', data: 'PaymentLinkEventData' },
  { type: 'payment_link.payment_failed', summary: 'A payment attempt on the link was refused or failed (the shopper may try again)', data: 'PaymentLinkEventData' },
  { type: 'payment_link.cancelled', summary: 'The merchant cancelled the link', data: 'PaymentLinkEventData' },
  { type: 'webhook_endpoint.test', summary: 'A test asked with POST /v2/webhook-endpoints/{id}/test: sent to that endpoint only', data: 'WebhookEndpointTestEventData' },
];
