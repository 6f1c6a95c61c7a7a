// The query of the payment list (GET /v2/payments and the dashboard's list).
import { type Static, Type } from 'typebox';
import { StringEnum } from '../platform/http/schemas.ts';
import { PageQuery, ValueList } from '../platform/http/lists.ts';
import { AUTHORIZATION_STATUSES, CURRENCIES } from './common.schemas.ts';

const AmountQuery = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]{0,14})$', description });

export const DEGREES = ['NOT', 'PARTIALLY', 'FULLY'] as const;

export const PaymentListQuery = Type.Object({
  ...PageQuery,
  authorization_status: Type.Optional(ValueList(AUTHORIZATION_STATUSES, 'Authorization status')),
  captured: Type.Optional(StringEnum(DEGREES, "overview.captured: how much of the authorized amount was captured")),
  refunded: Type.Optional(StringEnum(DEGREES, 'overview.refunded: how much of the captured amount was refunded')),
  voided: Type.Optional(StringEnum(DEGREES, 'overview.voided: how much of the authorized amount was voided')),
  order_reference: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'order.reference, exactly' })),
  partner: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Payments with a part at this partner' })),
  method: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Payments with a part paid by this method' })),
  currency: Type.Optional(StringEnum(CURRENCIES, 'Currency')),
  amount_gte: Type.Optional(AmountQuery('Amount at least this (minor units)')),
  amount_lte: Type.Optional(AmountQuery('Amount at most this (minor units)')),
  customer_email: Type.Optional(Type.String({ minLength: 3, maxLength: 254, description: 'customer.email, exactly (case does not matter)' })),
  card_last_four: Type.Optional(Type.String({ pattern: '^[0-9]{4}$', description: 'Payments with a card part ending in these four digits' })),
}, { additionalProperties: false });
export type PaymentListQueryT = Static<typeof PaymentListQuery>;
