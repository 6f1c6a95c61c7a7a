import { Type, type Static } from 'typebox';
import { StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import type { Customer, Order } from './common.schemas.ts';
import { CAPTURE_MODES, CURRENCIES, Amount, CaptureMode, Currency, Links } from './common.schemas.ts';
import { SESSION_STATUSES } from './client-sessions.repo.ts';

const Opt = Type.Optional;

export const IntegrationMode = Type.Union([Type.Literal('EMBEDDED'), Type.Literal('HOSTED_PAGE')], {
  description: 'EMBEDDED: the merchant page mounts the widget. HOSTED_PAGE: the shopper pays on a page payd serves.',
});

export const CreateClientSessionBody = Type.Object(
  {
    amount: Amount(),
    currency: Currency,
    entity_id: Opt(Uuid('Defaults to the authenticated entity; any other value is refused')),
    capture_mode: Opt(CaptureMode),
    integration_mode: Opt(IntegrationMode),
    allow_future_usage: Opt(Type.Boolean()),
    order: Opt(Type.Ref('Order')),
    customer: Opt(Type.Ref('Customer')),
    expires_at: Opt(Timestamp('Default: 30 minutes from now; at most 24 hours from now')),
    shopper_redirection_url: Opt(Type.String({ format: 'uri', maxLength: 2048, pattern: '^https?://', description: 'Where the shopper returns, with service-redirection-data' })),
  },
  { additionalProperties: false },
);
export type CreateClientSessionBody = Omit<Static<typeof CreateClientSessionBody>, 'order' | 'customer' | 'expires_at'> & {
  order?: Static<typeof Order>;
  customer?: Static<typeof Customer>;
  expires_at?: string;
};

export const AbortBody = Type.Object(
  { status: Type.Literal('ABORTED_BY_MERCHANT') },
  { additionalProperties: false },
);

export const ClientSession = Type.Object(
  {
    id: Uuid(),
    status: StringEnum(SESSION_STATUSES),
    amount: Type.Integer(),
    currency: StringEnum(CURRENCIES),
    entity_id: Uuid(),
    capture_mode: StringEnum(CAPTURE_MODES),
    integration_mode: StringEnum(['EMBEDDED', 'HOSTED_PAGE']),
    allow_future_usage: Type.Boolean(),
    order: Opt(Type.Ref('Order')),
    customer: Opt(Type.Ref('Customer')),
    expires_at: Timestamp(),
    shopper_redirection_url: Opt(Type.String()),
    widget: Type.Object({
      data: Type.String({ description: 'Opaque credential of this session for the browser widget (never the merchant key)' }),
      js_url: Type.String({ description: 'URL of the payment widget script' }),
    }),
    eligible_solutions: Type.Array(Type.Object({ partner: Type.String(), method: Type.String() })),
    payment_id: Opt(Uuid()),
    created_at: Timestamp(),
    links: Links,
  },
  { $id: 'ClientSession' },
);
