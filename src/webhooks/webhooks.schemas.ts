// TypeBox schemas of the webhook operator API: validation, types and OpenAPI.
import { Type, type Static, type TSchema } from 'typebox';
import { StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import {
  HEADER_NAME_PATTERN, HEADER_VALUE_PATTERN, MAX_HEADER_VALUE_LENGTH, MAX_HEADER_VALUES, MAX_HEADERS, MAX_URL_LENGTH,
} from './target.ts';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const WebhookHeader = Type.Object(
  {
    name: Type.String({ pattern: HEADER_NAME_PATTERN, description: 'Header name (names payd sets itself, e.g. content-type or payd-*, are refused)' }),
    values: Type.Array(Type.String({ maxLength: MAX_HEADER_VALUE_LENGTH, pattern: HEADER_VALUE_PATTERN }), {
      minItems: 1, maxItems: MAX_HEADER_VALUES, description: 'One header line per value',
    }),
  },
  { additionalProperties: false, description: 'An extra header sent with every call (the spec\'s webhook header shape)' },
);

export const WebhookEndpointBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH, description: 'http(s) URL that receives the POSTs' }),
    headers: Type.Optional(Type.Array(WebhookHeader, { maxItems: MAX_HEADERS })),
  },
  { additionalProperties: false },
);
export type WebhookEndpointBody = Static<typeof WebhookEndpointBody>;

export const WebhookEndpoint = Type.Object({
  id: Uuid('The endpoint id (the entity\'s default endpoint in /v2/webhook-endpoints)'),
  entity_id: Uuid(),
  url: Type.String(),
  headers: Type.Array(WebhookHeader),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  secret: Type.Optional(Type.String({
    description: 'The signing secret, present only in the response that created it (first endpoint of the entity). Later: GET .../webhook-secret',
  })),
});

/** At most this many endpoints per entity (webhooks.service.ts). */
const MAX_ENDPOINTS = 16;

const ENABLED_EVENTS = 'The event types sent to this endpoint (docs/webhooks.md lists them), or ["*"] for every type. An unknown type is a 400 naming it.';
const EnabledEvents = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 50, description: ENABLED_EVENTS });
const EndpointStatus = StringEnum(['enabled', 'disabled'] as const, 'disabled: no new event is sent to it (its pending deliveries still are)');
const Description = Type.String({ maxLength: 500, description: 'Free text for your own use' });

export const WebhookEndpointCreateBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH, description: 'http(s) URL that receives the POSTs' }),
    headers: Type.Optional(Type.Array(WebhookHeader, { maxItems: MAX_HEADERS })),
    enabled_events: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 50, description: `${ENABLED_EVENTS} Default ["*"].` })),
    description: Type.Optional(Description),
    status: Type.Optional({ ...EndpointStatus, description: 'enabled (default) or disabled: a disabled endpoint receives no new event' }),
  },
  { additionalProperties: false },
);
export type WebhookEndpointCreateBody = Static<typeof WebhookEndpointCreateBody>;

export const WebhookEndpointUpdateBody = Type.Object(
  {
    url: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH })),
    headers: Type.Optional(Type.Array(WebhookHeader, { maxItems: MAX_HEADERS, description: 'Replaces every extra header' })),
    enabled_events: Type.Optional(EnabledEvents),
    description: Type.Optional(Nullable(Description)),
    status: Type.Optional(EndpointStatus),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type WebhookEndpointUpdateBody = Static<typeof WebhookEndpointUpdateBody>;

const endpointFields = {
  id: Uuid(),
  object: Type.Literal('webhook_endpoint'),
  entity_id: Uuid(),
  url: Type.String(),
  headers: Type.Array(WebhookHeader, { description: 'Values masked' }),
  description: Nullable(Type.String()),
  enabled_events: Type.Array(Type.String()),
  status: EndpointStatus,
  is_default: Type.Boolean({
    description: 'The entity\'s default endpoint: the one of the deprecated /v2/webhook-endpoint routes, signed with the entity\'s secret',
  }),
  created_at: Timestamp(),
  updated_at: Timestamp(),
};

export const WebhookEndpointItem = Type.Object(endpointFields, { description: `A webhook endpoint (at most ${MAX_ENDPOINTS} per entity)` });
export const WebhookEndpointCreated = Type.Object({
  ...endpointFields,
  secret: Type.String({ description: 'The endpoint\'s signing secret (whsec_...): shown in this answer only' }),
});
export const WebhookEndpointList = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(WebhookEndpointItem),
  has_more: Type.Boolean(),
  next_cursor: Nullable(Uuid('starting_after for the next page; null on the last page')),
});
export const WebhookEndpointListQuery = Type.Object(
  {
    limit: Type.Optional(Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Page size, 1 to 100 (default 20)' })),
    starting_after: Type.Optional(Uuid('An endpoint id: the page continues after it (next_cursor of the previous page); newest first')),
  },
  { additionalProperties: false },
);
export const EndpointSecretRotated = Type.Object({
  endpoint_id: Uuid(),
  entity_id: Uuid(),
  secret: Type.String({ description: 'The new signing secret (whsec_...): shown in this answer only' }),
  version: Type.Integer({ description: '1 at creation, + 1 per rotation' }),
  created_at: Timestamp(),
  rotated_at: Nullable(Timestamp()),
  previous_expires_at: Nullable(Timestamp('Until then the previous secret also signs (a second v1 in payd-signature)')),
});
export const EndpointTestSent = Type.Object({
  id: Uuid('The test event\'s id (it is listed by GET /v2/events)'),
  type: Type.Literal('webhook_endpoint.test'),
  endpoint_id: Uuid(),
  delivery_id: Uuid('Its delivery to this endpoint (payd-delivery-id)'),
});

export const WebhookSecret = Type.Object({
  entity_id: Uuid(),
  secret: Type.String({ description: 'HMAC-SHA256 key of the payd-signature header (whsec_...)' }),
  version: Type.Integer({ description: '1 at creation, + 1 per rotation' }),
  created_at: Timestamp(),
  rotated_at: Nullable(Timestamp()),
  previous_expires_at: Nullable(Timestamp('Until then the previous secret also signs (a second v1 in payd-signature)')),
});

export const RotateSecretBody = Type.Object(
  {
    previous_secret_valid_seconds: Type.Optional(Type.Integer({
      minimum: 0, maximum: 604800, default: 86400,
      description: 'How long the previous secret keeps signing (a second v1), 0 to 604800 s; default 86400 (24 h)',
    })),
  },
  { additionalProperties: false },
);

export const DELIVERY_STATUSES = ['PENDING', 'DELIVERED', 'FAILED'] as const;
export const EVENT_STATUSES = [...DELIVERY_STATUSES, 'NO_DESTINATION'] as const;

export const WebhookAttempt = Type.Object({
  number: Type.Integer({ description: '1 for the first attempt of the delivery' }),
  url: Nullable(Type.String({ description: 'Where this attempt went (null: there was no destination)' })),
  started_at: Timestamp(),
  duration_ms: Type.Integer(),
  status_code: Nullable(Type.Integer({ description: 'HTTP status of the response; null when none came' })),
  error: Nullable(Type.String({ description: 'Why the attempt failed (HTTP status, timeout, connection error...)' })),
  response_body: Nullable(Type.String({ description: 'Start of the response body (2048 characters at most)' })),
});

export const WebhookDelivery = Type.Object({
  id: Uuid(),
  reason: StringEnum(['EVENT', 'REPLAY'] as const, 'EVENT: the first delivery; REPLAY: asked by the operator'),
  url: Nullable(Type.String({ description: "Where the next attempt goes: the event's own URL, else the entity's endpoint as set now (null: neither)" })),
  header_names: Type.Array(Type.String(), { description: 'Names of the extra headers sent with it (values are not shown: they may hold credentials)' }),
  status: StringEnum(DELIVERY_STATUSES, 'PENDING until a 2xx answer (DELIVERED) or the retry window ends (FAILED)'),
  attempt_count: Type.Integer(),
  next_attempt_at: Nullable(Timestamp('When PENDING: the earliest time of the next attempt')),
  last_status_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  delivered_at: Nullable(Timestamp()),
  created_at: Timestamp(),
  attempts: Type.Optional(Type.Array(WebhookAttempt, { description: 'The delivery log (on a single event only)' })),
});

const eventFields = {
  id: Uuid('The event id: the same in every delivery and replay (payd-event-id); receivers de-duplicate on it'),
  type: Type.String({ description: 'e.g. payment.captured, payment_link.paid' }),
  entity_id: Uuid(),
  created_at: Timestamp(),
  status: StringEnum(EVENT_STATUSES, 'Status of the newest delivery; NO_DESTINATION when the event had nowhere to go'),
  target: StringEnum(['EVENT', 'ENTITY_ENDPOINT'] as const, "EVENT: the event's own URL (a payment link's webhook); ENTITY_ENDPOINT: the entity's default endpoint"),
  deliveries: Type.Array(WebhookDelivery),
};

export const WebhookEventSummary = Type.Object(eventFields);
export const WebhookEvent = Type.Object({
  ...eventFields,
  data: Type.Unknown({ description: 'The snapshot sent as the data member of the payload' }),
});

export const WebhookEventList = Type.Object({
  data: Type.Array(WebhookEventSummary),
  next_cursor: Nullable(Type.String({ description: 'Pass as starting_after for the next page; null on the last page' })),
});

export const EventListQuery = Type.Object(
  {
    limit: Type.Optional(Type.String({ pattern: '^(100|[1-9][0-9]?)$', description: 'Page size, 1 to 100 (default 20)' })),
    starting_after: Type.Optional(Uuid('Id of the last event of the previous page (events come newest first)')),
    type: Type.Optional(Type.String({ maxLength: 100, description: 'Only events of this type' })),
    status: Type.Optional(StringEnum(EVENT_STATUSES, 'Only events whose newest delivery has this status')),
  },
  { additionalProperties: false },
);

export const EntityParams = Type.Object({ id: Uuid() });
export const EventParams = Type.Object({ id: Uuid(), event_id: Uuid() });

/** The body of a webhook call, and an item of GET /v2/events (data: see the OpenAPI webhooks section). */
export const EventSchema = Type.Object(
  {
    id: Uuid('Stable across retries and replays'),
    type: Type.String(),
    created_at: Timestamp(),
    entity_id: Uuid(),
    data: Type.Unknown(),
  },
  { $id: 'Event', description: 'A webhook event (the body of a webhook call and an item of GET /v2/events). Delivery is at least once and unordered: de-duplicate on id.' },
);

export const EventResendBody = Type.Object(
  {
    webhook_endpoint_id: Type.Optional(Uuid('Send it to this endpoint of yours only (whatever its enabled_events and status); default: wherever the event goes now')),
  },
  { additionalProperties: false },
);

export const EventResent = Type.Object({
  event_id: Uuid('The event resent: the same id, type, created_at and data as every earlier delivery (receivers de-duplicate on payd-event-id)'),
  deliveries: Type.Array(Type.Object({
    id: Uuid('The new delivery (payd-delivery-id)'),
    endpoint_id: Nullable(Uuid('The endpoint it goes to; null: the event\'s own URL (a payment link\'s webhook.url)')),
    url: Nullable(Type.String({ description: 'Where it goes' })),
    status: StringEnum(DELIVERY_STATUSES, 'PENDING until a 2xx answer (DELIVERED) or the retry window ends (FAILED)'),
    created_at: Timestamp(),
  }), { minItems: 1, description: 'One new delivery per destination, due at once, with a fresh retry window' }),
});
