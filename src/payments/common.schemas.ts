// Shapes the spec shares between client sessions, payments and payment links:
// Order, Address, Shipment, Item line, Marketplace seller, Customer, Browser.
// Bounds the spec leaves open are documented in docs/decisions.md.
import { Type, type Static } from 'typebox';
import { StringEnum, Timestamp } from '../platform/http/schemas.ts';
import { CURRENCY_DIGITS } from '../money/currency.ts';

const Str = (max = 255, extra: Record<string, unknown> = {}) => Type.String({ maxLength: max, ...extra });
const Opt = <T extends Parameters<typeof Type.Optional>[0]>(t: T) => Type.Optional(t);

import { NonNegativeAmount } from '../money/amount.ts';
export { Amount, MAX_AMOUNT, NonNegativeAmount } from '../money/amount.ts';

/** ISO 4217 currencies payd accepts, with their minor units (src/money/currency.ts). */
export { CURRENCY_DIGITS } from '../money/currency.ts';
export const Currency = StringEnum(Object.keys(CURRENCY_DIGITS), 'ISO 4217 code');
/** The values of closed fields, for response schemas (StringEnum). */
export const CURRENCIES = Object.keys(CURRENCY_DIGITS);
export const CAPTURE_MODES = ['MANUAL', 'AUTOMATIC'] as const;
export const AUTHORIZATION_STATUSES = ['AUTHORIZED', 'REFUSED', 'ERROR', 'PENDING'] as const;
export const OPERATION_STATUSES = ['SUCCESS', 'FAILURE', 'PENDING', 'CONFLICT'] as const;
export const TRIGGERS = ['MERCHANT', 'SYSTEM'] as const;
/** A ledger row's status: an authorization's (AUTHORIZED, REFUSED, ERROR) or a capture's, refund's or void's (SUCCESS, FAILURE); PENDING until the partner says. */
export const TX_STATUSES = ['AUTHORIZED', 'REFUSED', 'ERROR', 'PENDING', 'SUCCESS', 'FAILURE'] as const;

// The closed unions of the payment's states, used by the row types, the views and the
// schemas (StringEnum of the same lists: enums in the OpenAPI document).
export type CaptureModeValue = typeof CAPTURE_MODES[number];
export type AuthorizationStatus = typeof AUTHORIZATION_STATUSES[number];
export type OperationStatus = typeof OPERATION_STATUSES[number];
export type TxStatus = typeof TX_STATUSES[number];
export type Trigger = typeof TRIGGERS[number];

/** For exhaustive switches: a value the union says cannot exist. */
export function unreachable(value: never): never {
  throw new Error(`unexpected state: ${String(value)}`);
}

// Descriptive data (order, addresses, shipments, item lines, sellers, customer) is the
// merchant's to describe: fields the spec names keep their types, "values seen" are
// examples, not closed lists, and fields the spec does not name are kept and echoed,
// bounded (decisions.md, "Descriptive data"). Only what drives behaviour stays closed:
// amounts, currency, capture_mode, partner, method, instruments.
const Scalar = Type.Union([Str(1024), Type.Number(), Type.Boolean(), Type.Null()]);
const Nested = Type.Union([
  Scalar,
  Type.Array(Scalar, { maxItems: 50 }),
  Type.Record(Type.String({ maxLength: 64 }), Scalar, { maxProperties: 50 }),
]);
const ExtraValue = Type.Union([
  Scalar,
  Type.Array(Nested, { maxItems: 50 }),
  Type.Record(Type.String({ maxLength: 64 }), Nested, { maxProperties: 50 }),
], { description: 'A field the spec does not name: kept and echoed (strings up to 1024 characters, two levels of nesting, 50 items or keys each)' });
/** Options of a descriptive object: other fields are accepted and echoed, at most 100 in all. */
const descriptive = (id: string) => ({ additionalProperties: ExtraValue, maxProperties: 100, $id: id });
/** A descriptive value the spec shows examples of ("values seen"), not a closed list. */
const Seen = (...values: string[]) => Str(64, { description: `Values seen: ${values.join(', ')} (others are accepted)`, examples: values });

export const CountryCode = Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2' });
export const CaptureMode = StringEnum(['MANUAL', 'AUTOMATIC'], {
  description: 'MANUAL: capture later with POST /captures. AUTOMATIC: payd captures the whole amount once authorized.',
});

export const Address = Type.Object(
  {
    gender: Opt(Seen('FEMALE', 'MALE')),
    first_name: Opt(Str()),
    middle_name: Opt(Str()),
    last_name: Opt(Str()),
    address_lines: Opt(Type.Array(Str(), { maxItems: 5 })),
    city: Opt(Str()),
    postal_code: Opt(Str(32)),
    country_code: Opt(CountryCode),
    province_code: Opt(Type.String({ pattern: '^[A-Z]{2}-[A-Z0-9]{1,3}$', description: '<country>-<subdivision>, ISO 3166-2' })),
    phone_number: Opt(Str(32)),
    mobile_phone_number: Opt(Str(32)),
    work_phone_number: Opt(Str(32)),
    delivery_point_name: Opt(Str()),
  },
  descriptive('Address'),
);

export const ItemLine = Type.Object(
  {
    type: Opt(Seen('PHYSICAL', 'SHIPPING_FEES')),
    sku_reference: Opt(Str()),
    name: Opt(Str()),
    'the service': Opt(Str(255, { description: 'Listed under this name by the spec (a string)' })),
    quantity: Opt(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    unit_gross_price: Opt(NonNegativeAmount()),
    net_amount: Opt(NonNegativeAmount()),
    tax_amount: Opt(NonNegativeAmount()),
    tax_rate: Opt(Type.Number({ minimum: 0, maximum: 100 })),
    seller_reference: Opt(Str()),
    seller_name: Opt(Str()),
    is_marketplace_seller: Opt(Type.Boolean()),
    product_uri: Opt(Type.String({ format: 'uri', maxLength: 2048 })),
    image_uri: Opt(Type.String({ format: 'uri', maxLength: 2048 })),
    categories: Opt(Type.Array(Str(), { maxItems: 20 })),
  },
  descriptive('ItemLine'),
);

export const Shipment = Type.Object(
  {
    net_amount: Opt(NonNegativeAmount()),
    delivery_type: Opt(Seen('EXTERNAL_PICKUP', 'USER_DELIVERY')),
    delivery_quickness: Opt(Seen('REGULAR')),
    delivery_method_reference: Opt(Str()),
    estimated_delivery_date_time: Opt(Timestamp()),
    shipping_address: Opt(Type.Ref('Address')),
    item_lines: Opt(Type.Array(Type.Ref('ItemLine'), { maxItems: 500 })),
  },
  descriptive('Shipment'),
);

export const MarketplaceSeller = Type.Object(
  {
    name: Opt(Str()),
    reference: Opt(Str()),
    total_sales_count: Opt(Type.Integer({ minimum: 0 })),
    total_sales_amount: Opt(NonNegativeAmount()),
    registration_date_time: Opt(Timestamp()),
    last_update_date_time: Opt(Timestamp()),
  },
  descriptive('MarketplaceSeller'),
);

export const Order = Type.Object(
  {
    reference: Opt(Str(128, { description: "The merchant's order reference" })),
    additional_data: Opt(Type.Record(Type.String({ maxLength: 64 }), Type.Union([Type.String({ maxLength: 1024 }), Type.Number()]), {
      maxProperties: 50,
      description: 'Free-form custom keys with string or number values',
    })),
    net_amount: Opt(NonNegativeAmount()),
    tax_amount: Opt(NonNegativeAmount()),
    billing_address: Opt(Type.Ref('Address')),
    shipments: Opt(Type.Array(Type.Ref('Shipment'), { maxItems: 50 })),
    marketplace_sellers: Opt(Type.Array(Type.Ref('MarketplaceSeller'), { maxItems: 100 })),
  },
  descriptive('Order'),
);
export type Order = Static<typeof Order>;

const Indicator = () => Seen('MORE_60_DAYS');
export const Customer = Type.Object(
  {
    reference: Opt(Str()),
    type: Opt(Seen('PERSON')),
    email: Opt(Type.String({ format: 'email', maxLength: 254 })),
    gender: Opt(Seen('FEMALE', 'MALE')),
    first_name: Opt(Str()),
    middle_name: Opt(Str()),
    last_name: Opt(Str()),
    birth_date: Opt(Type.String({ format: 'date' })),
    ip_address: Opt(Type.String({ anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }], maxLength: 45 })),
    locale: Opt(Type.String({ pattern: '^[a-zA-Z]{2,3}([-_][a-zA-Z0-9]{2,8})*$', maxLength: 35, description: 'Language tag, e.g. fr-FR' })),
    account: Opt(Type.Object(
      {
        creation_date_time: Opt(Timestamp()),
        update_date_time: Opt(Timestamp()),
        password_update_date_time: Opt(Timestamp()),
        first_purchase_date_time: Opt(Timestamp()),
        prior_purchase_date_time: Opt(Timestamp()),
        authentication_date_time: Opt(Timestamp()),
        purchase_count_last_day: Opt(Type.Integer({ minimum: 0 })),
        purchase_count_last_six_months: Opt(Type.Integer({ minimum: 0 })),
        purchase_count_last_year: Opt(Type.Integer({ minimum: 0 })),
        different_card_count_last_day: Opt(Type.Integer({ minimum: 0 })),
        purchase_total_amount: Opt(NonNegativeAmount()),
        authentication_method: Opt(Seen('MERCHANT_CREDENTIALS')),
        age_indicator: Opt(Indicator()),
        change_indicator: Opt(Indicator()),
        password_change_indicator: Opt(Indicator()),
      },
      { additionalProperties: ExtraValue, maxProperties: 100 },
    )),
  },
  descriptive('Customer'),
);
export type Customer = Static<typeof Customer>;

export const Browser = Type.Object(
  {
    user_agent: Opt(Str(2048)),
    referrer: Opt(Str(2048)),
    accept_header: Opt(Str(2048)),
    color_depth: Opt(Type.Integer({ minimum: 1, maximum: 64 })),
    java_enabled: Opt(Type.Boolean()),
    javascript_enabled: Opt(Type.Boolean()),
    locale: Opt(Str(35)),
    screen_height: Opt(Type.Integer({ minimum: 0, maximum: 100_000 })),
    screen_width: Opt(Type.Integer({ minimum: 0, maximum: 100_000 })),
    utc_time_zone: Opt(Type.Integer({ minimum: -840, maximum: 840, description: 'Offset from UTC in minutes' })),
  },
  { additionalProperties: false, $id: 'Browser' },
);

export const ThreeDsOptions = Type.Object(
  {
    challenge_indicator: Opt(StringEnum(['NO_PREFERENCE', 'NO_CHALLENGE_REQUESTED', 'CHALLENGE_REQUESTED', 'CHALLENGE_MANDATED'])),
    challenge_exemption: Opt(StringEnum(['LOW_VALUE', 'TRANSACTION_RISK_ANALYSIS', 'TRUSTED_BENEFICIARY', 'SECURE_CORPORATE_PAYMENT'])),
  },
  { additionalProperties: false, $id: 'ThreeDsAuthenticationOptions' },
);

export const Link = Type.Object({ href: Type.String(), method: Type.String() });
export const Links = Type.Record(Type.String(), Link);

export const COMMON_SCHEMAS = [Address, ItemLine, Shipment, MarketplaceSeller, Order, Customer, Browser, ThreeDsOptions];
