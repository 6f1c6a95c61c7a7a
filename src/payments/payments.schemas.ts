// Payment API request and response shapes (POST /v2/payments and operations).
import { Type, type Static } from 'typebox';
import { StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import type { Browser, Customer, Order, ThreeDsOptions } from './common.schemas.ts';
import { AUTHORIZATION_STATUSES, CAPTURE_MODES, CURRENCIES, OPERATION_STATUSES, TRIGGERS, TX_STATUSES, Amount, CaptureMode, Currency, Link, Links, NonNegativeAmount } from './common.schemas.ts';

const Opt = Type.Optional;

export const CardInstrument = Type.Object(
  {
    type: Type.Literal('CARD'),
    number: Type.String({ pattern: '^[0-9]{12,19}$', description: 'Card number (PAN), digits only. Never stored or logged.' }),
    expiry_month: Type.String({ pattern: '^(0[1-9]|1[0-2])$', description: 'MM' }),
    expiry_year: Type.String({ pattern: '^20[0-9]{2}$', description: 'YYYY' }),
    cvv: Opt(Type.String({ pattern: '^[0-9]{3,4}$', description: 'Never stored or logged' })),
    holder_name: Opt(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
);

export const GiftCardInstrument = Type.Object(
  {
    type: Type.Literal('GIFT_CARD'),
    number: Type.String({ pattern: '^[0-9]{12,19}$' }),
    pin: Opt(Type.String({ pattern: '^[0-9]{4,8}$' })),
  },
  { additionalProperties: false },
);

export const SavedCardInstrument = Type.Object(
  {
    type: Type.Literal('SAVED_CARD'),
    saved_card_id: Uuid('A saved card of the entity (GET /v2/saved-cards): the card the partner kept when a payment saved it (token_saved)'),
    cvv: Opt(Type.String({ pattern: '^[0-9]{3,4}$', description: 'The CVC the cardholder typed (customer-initiated only). Never stored or logged' })),
    initiator: Opt(StringEnum(['CUSTOMER', 'MERCHANT'], 'CUSTOMER: the cardholder is present (customer-initiated; 3-D Secure as the card requires). ' +
      'MERCHANT: a merchant-initiated payment without the cardholder (no CVC, no 3-D Secure), sent to the partner as such. Default: CUSTOMER with a cvv, else MERCHANT')),
  },
  { additionalProperties: false },
);

export const SplitPart = Type.Object(
  {
    partner: Type.String({ minLength: 1, maxLength: 64, description: 'e.g. card-sim, gift-sim, bnpl-sim' }),
    method: Type.String({ minLength: 1, maxLength: 64, description: 'e.g. CARD, GIFT_CARD, INSTALLMENTS_3X' }),
    amount: Amount(),
    instrument: Opt(Type.Union([CardInstrument, GiftCardInstrument, SavedCardInstrument], { description: 'Required for CARD (a CARD or a SAVED_CARD) and GIFT_CARD' })),
    save_token: Opt(Type.Boolean({ description: 'Ask the partner to keep the card on file for future payments (default: true on the CARD part when allow_future_usage is true)' })),
  },
  { additionalProperties: false },
);
export type SplitPart = Static<typeof SplitPart>;

export const CreatePaymentBody = Type.Object(
  {
    amount: Amount(),
    currency: Currency,
    entity_id: Opt(Uuid('Defaults to the authenticated entity; any other value is refused')),
    capture_mode: Opt(CaptureMode),
    allow_future_usage: Opt(Type.Boolean({ description: 'The shopper agreed to keep the card on file: the CARD part saves a token unless it says save_token: false' })),
    client_session_id: Opt(Uuid('The client session this payment completes')),
    order: Opt(Type.Ref('Order')),
    customer: Opt(Type.Ref('Customer')),
    browser: Opt(Type.Ref('Browser')),
    three_ds_authentication_options: Opt(Type.Ref('ThreeDsAuthenticationOptions')),
    split: Type.Array(SplitPart, { minItems: 1, maxItems: 10, description: 'How the amount is paid; the amounts must add up to amount' }),
  },
  { additionalProperties: false },
);
/** Referenced shapes (Type.Ref) resolved to their static types. */
export type CreatePaymentBody = Omit<Static<typeof CreatePaymentBody>, 'order' | 'customer' | 'browser' | 'three_ds_authentication_options'> & {
  order?: Static<typeof Order>;
  customer?: Static<typeof Customer>;
  browser?: Static<typeof Browser>;
  three_ds_authentication_options?: Static<typeof ThreeDsOptions>;
};


export const CaptureBody = Type.Object(
  {
    amount: Amount('Amount to capture; at most available_to_capture'),
    merchant_reference: Opt(Type.String({ maxLength: 128 })),
  },
  { additionalProperties: false },
);
export const RefundBody = Type.Object(
  {
    amount: Opt(Amount('Amount to refund; defaults to available_to_refund')),
    merchant_reference: Opt(Type.String({ maxLength: 128 })),
    reason: Opt(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
);
export const VoidBody = Type.Object(
  {
    amount: Opt(Amount('Amount to void; defaults to available_to_void')),
    merchant_reference: Opt(Type.String({ maxLength: 128 })),
  },
  { additionalProperties: false },
);
export type OperationBody = {
  amount?: number; merchant_reference?: string; reason?: string;
  /** Internal (not in the schema): the operation draws only on these authorizations. */
  authorizations?: readonly string[];
};

export const ThreeDs = Type.Object({
  eci: Type.String(),
  version: Type.String(),
  flow: Type.String({ description: 'FRICTIONLESS or CHALLENGE' }),
  ds_transaction_id: Uuid(),
  acs_transaction_id: Uuid(),
});

export const Card = Type.Object(
  {
    bin: Type.String(),
    type: Type.String({ description: 'Funding type as the partner reports it: CREDIT, DEBIT or PREPAID; UNKNOWN until a partner has said (partners/bin.ts)' }),
    last_four_digits: Type.String(),
    holder_name: Opt(Type.String()),
    expiry_month: Type.String(),
    expiry_year: Type.String(),
    country_code: Opt(Type.String()),
    fingerprint: Type.String({ description: 'Keyed hash of the card number, stable per merchant entity' }),
    selected_network: Type.String(),
    three_ds: Opt(ThreeDs),
  },
  { $id: 'Card' },
);

export const PartnerTransaction = Type.Object(
  {
    id: Uuid(),
    created_at: Timestamp(),
    updated_at: Timestamp(),
    status: StringEnum(TX_STATUSES, 'Authorization: AUTHORIZED, REFUSED, ERROR, PENDING. Operations: SUCCESS, FAILURE, PENDING'),
    amount: Type.Integer(),
    partner: Type.String(),
    method: Type.String(),
    card: Opt(Type.Ref('Card')),
    partner_reference: Opt(Type.String()),
    partner_status: Opt(Type.String()),
    partner_status_description: Opt(Type.String()),
    status_code: Opt(Type.String()),
    save_token: Opt(Type.Boolean({ description: 'The partner was asked to keep the card on file' })),
    token_saved: Opt(Type.Boolean({ description: 'With save_token: whether the partner kept it (true once the authorization succeeded)' })),
    saved_card_id: Opt(Uuid('The saved card: the one this authorization saved (token_saved), or the one it paid with (a SAVED_CARD instrument)')),
  },
  { $id: 'PartnerTransaction' },
);

export const Operation = Type.Object(
  {
    id: Uuid(),
    amount: Type.Integer(),
    created_at: Timestamp(),
    updated_at: Timestamp(),
    triggered_by: StringEnum(TRIGGERS, 'MERCHANT, or SYSTEM for automatic captures and reversals'),
    merchant_reference: Opt(Type.String()),
    reason: Opt(Type.String()),
    status: StringEnum(OPERATION_STATUSES, 'CONFLICT when some partner transactions succeeded and others failed'),
    partner_transactions: Type.Array(Type.Ref('PartnerTransaction')),
  },
  { $id: 'Operation' },
);

/** One capture, refund or void read on its own (GET /v2/payments/{id}/operations/{operation_id}). */
export const PaymentOperation = Type.Object(
  {
    kind: StringEnum(['CAPTURE', 'REFUND', 'VOID']),
    payment_id: Uuid(),
    id: Uuid(),
    amount: Type.Integer(),
    created_at: Timestamp(),
    updated_at: Timestamp(),
    triggered_by: StringEnum(TRIGGERS),
    merchant_reference: Opt(Type.String()),
    reason: Opt(Type.String()),
    status: StringEnum(OPERATION_STATUSES),
    partner_transactions: Type.Array(Type.Ref('PartnerTransaction')),
  },
  { $id: 'PaymentOperation', description: 'A capture, refund or void with its kind and its payment' },
);

const Degree = StringEnum(['NOT', 'PARTIALLY', 'FULLY']);

const PaymentAmounts = Type.Object({
  authorize_pending: NonNegativeAmount(),
  total_authorized: NonNegativeAmount(),
  total_voided: NonNegativeAmount(),
  available_to_void: NonNegativeAmount(),
  total_captured: NonNegativeAmount(),
  available_to_capture: NonNegativeAmount(),
  total_refunded: NonNegativeAmount(),
  available_to_refund: NonNegativeAmount(),
});
const PaymentOverview = Type.Object({ consumed: Degree, captured: Degree, voided: Degree, refunded: Degree });
const SplitSummary = Type.Array(Type.Object({ partner: Type.String(), method: Type.String(), amount: Type.Integer() }));
const Redirection = Type.Object({ url: Type.String(), method: StringEnum(['GET', 'POST']) }, { description: 'Present while a shopper action (3-D Secure challenge) is needed' });

export const Payment = Type.Object(
  {
    id: Uuid(),
    created_at: Timestamp(),
    version: Type.Integer({ description: 'Starts at 1 and increases by one on every change of the payment' }),
    entity_id: Uuid(),
    amount: Type.Integer(),
    currency: StringEnum(CURRENCIES),
    allow_future_usage: Type.Boolean(),
    client_session_id: Opt(Uuid()),
    order_reference: Opt(Type.String()),
    order: Opt(Type.Ref('Order')),
    capture_mode: StringEnum(CAPTURE_MODES),
    amounts: PaymentAmounts,
    overview: PaymentOverview,
    browser: Opt(Type.Ref('Browser')),
    split: SplitSummary,
    authorization: Type.Object({
      status: StringEnum(AUTHORIZATION_STATUSES),
      redirection: Opt(Redirection),
      partner_transactions: Type.Array(Type.Ref('PartnerTransaction')),
    }),
    captures: Type.Array(Type.Ref('Operation')),
    voids: Type.Array(Type.Ref('Operation')),
    refunds: Type.Array(Type.Ref('Operation')),
    links: Links,
  },
  { $id: 'Payment' },
);

/** A card the partner kept for a customer (GET /v2/saved-cards): never its number or CVC. */
export const SavedCard = Type.Object(
  {
    id: Uuid('The id of the authorization that saved it (its saved_card_id)'),
    entity_id: Uuid(),
    partner: Type.String({ description: 'The partner that keeps the card; payments with it go to this partner' }),
    customer: Type.Object({
      reference: Opt(Type.String({ description: 'customer.reference of the payment that saved it' })),
      email: Opt(Type.String({ description: 'customer.email of the payment that saved it (lower case)' })),
    }),
    card: Type.Object({
      bin: Type.String(),
      type: Type.String({ description: 'Funding type as the partner reported it: CREDIT, DEBIT, PREPAID or UNKNOWN' }),
      last_four_digits: Type.String(),
      expiry_month: Type.String(),
      expiry_year: Type.String(),
      fingerprint: Type.String({ description: 'Keyed hash of the card number, stable per merchant entity' }),
      selected_network: Type.String(),
      country_code: Opt(Type.String()),
      holder_name: Opt(Type.String()),
    }),
    created_at: Timestamp(),
  },
  { $id: 'SavedCard' },
);

export const PAYMENT_SCHEMAS = [Card, PartnerTransaction, Operation, PaymentOperation, Payment, SavedCard];

/**
 * `data` of a payment's webhook event (docs/webhooks.md): the payment's summary as the
 * change leaves it, plus what changed: the authorization with its partner transactions
 * (payment.authorized|refused|failed), or the one operation with its partner
 * transactions (payment.captured, payment.refund_failed, ...). Never the lists of
 * earlier operations, so an event's size does not grow with the payment's history.
 */
export const PaymentEventData = Type.Object(
  {
    id: Uuid(),
    created_at: Timestamp(),
    version: Type.Integer({ description: 'The payment version this event describes (events may arrive out of order)' }),
    entity_id: Uuid(),
    amount: Type.Integer(),
    currency: StringEnum(CURRENCIES),
    allow_future_usage: Type.Boolean(),
    client_session_id: Opt(Uuid()),
    order_reference: Opt(Type.String()),
    capture_mode: StringEnum(CAPTURE_MODES),
    amounts: PaymentAmounts,
    overview: PaymentOverview,
    split: SplitSummary,
    authorization: Type.Object({
      status: StringEnum(AUTHORIZATION_STATUSES),
      redirection: Opt(Redirection),
      partner_transactions: Opt(Type.Array(Type.Ref('PartnerTransaction'), { description: 'In authorization events only' })),
    }),
    operation_id: Opt(Uuid('In operation events: the operation the event is about (operation.id)')),
    operation: Opt(Type.Object({
      kind: StringEnum(['CAPTURE', 'REFUND', 'VOID']),
      id: Uuid(),
      amount: Type.Integer(),
      created_at: Timestamp(),
      updated_at: Timestamp(),
      triggered_by: StringEnum(TRIGGERS),
      merchant_reference: Opt(Type.String()),
      reason: Opt(Type.String()),
      status: StringEnum(OPERATION_STATUSES),
      partner_transactions: Type.Array(Type.Ref('PartnerTransaction')),
    }, { description: 'In operation events: the operation as the change leaves it' })),
    links: Type.Object({ self: Link }),
  },
  { $id: 'PaymentEventData' },
);
export type PaymentEventDataT = Static<typeof PaymentEventData>;
