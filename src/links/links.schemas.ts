// Payment links: request and response shapes (validation, types and OpenAPI).
import { Type, type Static } from 'typebox';
import { StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import type { Customer, Order, ThreeDsOptions } from '../payments/common.schemas.ts';
import { CAPTURE_MODES, CURRENCIES, Amount, CaptureMode, Currency, Links } from '../payments/common.schemas.ts';

const Opt = Type.Optional;

export const WebhookHeaderSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'HTTP header name' }),
    values: Type.Array(Type.String({ maxLength: 1000 }), { minItems: 1, maxItems: 10, description: 'Values sent under this name' }),
  },
  { additionalProperties: false },
);

export const LinkWebhook = Type.Object(
  {
    url: Type.String({ format: 'uri', maxLength: 2048, pattern: '^https?://', description: 'Where payd POSTs the events of this link' }),
    headers: Opt(Type.Array(WebhookHeaderSchema, { maxItems: 20, description: 'Headers sent with every call to url' })),
  },
  { additionalProperties: false, $id: 'PaymentLinkWebhook' },
);

export const CreatePaymentLinkBody = Type.Object(
  {
    entity_id: Opt(Uuid('Defaults to the authenticated entity; any other value is refused')),
    expires_at: Opt(Timestamp('Default: 7 days from now; at most 90 days from now')),
    amount: Amount(),
    currency: Currency,
    capture_mode: Opt(CaptureMode),
    shopper_redirection_url: Opt(Type.String({ format: 'uri', maxLength: 2048, pattern: '^https?://', description: 'Where the shopper returns after paying, with service-redirection-data' })),
    order: Opt(Type.Ref('Order')),
    customer: Opt(Type.Ref('Customer')),
    three_ds_authentication_options: Opt(Type.Ref('ThreeDsAuthenticationOptions')),
    webhook: Opt(Type.Ref('PaymentLinkWebhook')),
    allow_future_usage: Opt(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type CreatePaymentLinkBody = Omit<Static<typeof CreatePaymentLinkBody>, 'order' | 'customer' | 'three_ds_authentication_options' | 'webhook'> & {
  order?: Static<typeof Order>;
  customer?: Static<typeof Customer>;
  three_ds_authentication_options?: Static<typeof ThreeDsOptions>;
  webhook?: Static<typeof LinkWebhook>;
};

export const PaymentLink = Type.Object(
  {
    id: Uuid(),
    version: Type.Integer(),
    entity_id: Uuid(),
    status: StringEnum(['CREATED', 'PAID', 'CANCELLED', 'EXPIRED'], 'CREATED (payable), PAID (a payment was authorized), CANCELLED, or EXPIRED (past expires_at, never paid)'),
    amount: Type.Integer(),
    currency: StringEnum(CURRENCIES),
    shopper_redirection_url: Opt(Type.String()),
    capture_mode: StringEnum(CAPTURE_MODES),
    expires_at: Timestamp(),
    allow_future_usage: Type.Boolean(),
    order: Opt(Type.Ref('Order')),
    customer: Opt(Type.Ref('Customer')),
    three_ds_authentication_options: Opt(Type.Ref('ThreeDsAuthenticationOptions')),
    webhook: Opt(Type.Ref('PaymentLinkWebhook')),
    payment_id: Opt(Uuid('The authorized payment, once PAID')),
    created_at: Timestamp(),
    links: Links,
  },
  { $id: 'PaymentLink' },
);

export const LINK_SCHEMAS = [LinkWebhook, PaymentLink];
