// The schemas of the checkout's browser API (session-api.routes.ts): what the widget reads
// of its session, the language parameter, and the outcome of a submit.
import { Type } from 'typebox';
import { StringEnum, Timestamp, Uuid } from '../platform/http/schemas.ts';
import { LANG_PARAM, LOCALES } from '../web/index.ts';
import { DECLINE_REASONS } from './decline-reasons.ts';

export const SessionInfo = Type.Object({
  client_session_id: Uuid(),
  status: Type.String(),
  locale: StringEnum(LOCALES, { description: 'Language of the widget: the shopper\'s explicit choice (the lang parameter, or on payd\'s own pages the payd_lang cookie), else the session customer\'s locale when supported, else the browser\'s Accept-Language, else en' }),
  merchant: Type.Object({ name: Type.String({ description: 'The entity\'s display name' }) }),
  order: Type.Object({
    reference: Type.Optional(Type.String()),
    items: Type.Array(Type.Object({ name: Type.String(), quantity: Type.Integer() }), { description: 'Item lines of the order\'s shipments (at most 20; shipping fees left out)' }),
  }),
  amount: Type.Integer(),
  currency: Type.String(),
  expires_at: Timestamp(),
  eligible_solutions: Type.Array(Type.Object({
    partner: Type.String(),
    method: Type.String(),
    requires: Type.Optional(Type.Array(Type.Literal('customer_email'), {
      description: 'What the shopper must give with the submit for this solution (the session lacks it): customer_email',
    })),
  }), {
    description: 'The solutions the shopper is offered: those of the session that can succeed with what it holds, or with what the widget asks the shopper (requires)',
  }),
  saved_cards: Type.Array(Type.Object({
    id: Uuid(),
    partner: Type.String(),
    selected_network: Type.String(),
    last_four_digits: Type.String(),
    expiry_month: Type.String(),
    expiry_year: Type.String(),
  }), { description: "The session customer's saved cards the shopper may pay with (its CVC typed in the card frame): kept by a partner offered for CARD, not expired" }),
  can_pay: Type.Boolean({ description: 'Whether the session takes a payment attempt now (CREATED, or its last attempt was refused or failed and attempts are left)' }),
  attempts_left: Type.Integer({ minimum: 0 }),
  last_attempt_status: Type.Optional(Type.String({ description: 'Authorization status of the latest attempt' })),
  payment: Type.Optional(Type.Object({ id: Uuid(), authorization_status: Type.String() })),
  return_url: Type.String({ description: 'Where the shopper goes back to the merchant (payd adds service-redirection-data)' }),
});

export const LangQuery = Type.Object({
  [LANG_PARAM]: Type.Optional(Type.String({ maxLength: 35, description: 'The shopper\'s explicit choice of language (a language tag; one payd does not speak is ignored): the widget\'s locale and the language of problem details. Without it, on payd\'s own pages, the payd_lang cookie' })),
});

export const SubmitResult = Type.Object({
  payment_id: Uuid(),
  authorization_status: Type.String({ description: 'AUTHORIZED, REFUSED, ERROR, or PENDING with a redirection (3-D Secure)' }),
  can_retry: Type.Boolean({ description: 'The attempt was refused or failed and the shopper may try another card or method' }),
  attempts_left: Type.Integer({ minimum: 0 }),
  redirection: Type.Optional(Type.Object({ url: Type.String(), method: Type.String() })),
  decline_reason: Type.Optional(StringEnum(DECLINE_REASONS, {
    description: 'A refused attempt the shopper can act on: an expired card, a wrong security code, insufficient funds. Absent for every other decline (fraud and issuer declines are not named).',
  })),
  return_url: Type.String(),
});
