// TypeBox schemas of eligibility: the operator's rule sets and POST /v2/eligible-solutions.
// The semantics of a rule are in rules.ts and docs/eligibility.md; checks that need the
// partner registry (names, methods) or compare fields are in rules.validate.ts.
import { Type, type Static } from 'typebox';
import { Timestamp, Uuid } from '../platform/http/schemas.ts';
import { Amount, MAX_AMOUNT } from '../money/amount.ts';
import { CURRENCY_DIGITS } from '../money/currency.ts';

const Opt = Type.Optional;
const CURRENCIES = Object.keys(CURRENCY_DIGITS);

/** A currency payd accepts; an enum so that a refusal lists the allowed codes. */
const CurrencyCode = Type.Unsafe<string>(Type.String({ enum: CURRENCIES, description: 'ISO 4217 code' }));
const Country = Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2, upper case' });
const Target = (what: string) =>
  Type.String({ minLength: 1, maxLength: 64, pattern: '^(\\*|[A-Za-z0-9_.-]+)$', description: `${what}, or * for any (the default)` });

const CountryList = (description: string) => Type.Array(Country, { minItems: 1, maxItems: 250, uniqueItems: true, description });
const CountryLists = (description: string) => Type.Object(
  {
    allow: Opt(CountryList('The country must be known and in this list')),
    deny: Opt(CountryList('The country must not be in this list (an unknown country passes)')),
  },
  { additionalProperties: false, minProperties: 1, description },
);

const Bound = Type.Integer({ minimum: 0, maximum: MAX_AMOUNT });
const AmountBounds = Type.Object(
  { min_amount: Opt(Bound), max_amount: Opt(Bound) },
  { additionalProperties: false, minProperties: 1, description: 'Inclusive bounds in the minor unit of this currency' },
);

export const Rule = Type.Object(
  {
    description: Opt(Type.String({ maxLength: 200, description: 'Free text for operators' })),
    partner: Opt(Target('A partner name (card-sim, gift-sim, bnpl-sim)')),
    method: Opt(Target('A method of the partner (CARD, GIFT_CARD, INSTALLMENTS_3X, ...)')),
    enabled: Opt(Type.Boolean({ description: 'false: the targeted solutions are never eligible (no conditions allowed then)' })),
    currencies: Opt(Type.Array(CurrencyCode, { minItems: 1, uniqueItems: true, description: 'The order currency must be one of these' })),
    amounts: Opt(Type.Object(
      Object.fromEntries(CURRENCIES.map((c) => [c, Opt(AmountBounds)])),
      { additionalProperties: false, minProperties: 1, description: 'Amount bounds per currency; a currency not listed is not bounded by this rule' },
    )),
    billing_countries: Opt(CountryLists('Country of order.billing_address')),
    shipping_countries: Opt(CountryLists('Countries of order.shipments[].shipping_address (every one must pass)')),
    marketplace: Opt(Type.Boolean({ description: 'true: marketplace orders only; false: never marketplace orders; absent: any' })),
    customer_types: Opt(Type.Array(Type.Unsafe<'PERSON' | 'COMPANY'>(Type.String({ enum: ['PERSON', 'COMPANY'] })), {
      minItems: 1, uniqueItems: true, description: 'customer.type must be known and in this list',
    })),
  },
  { additionalProperties: false },
);
export type Rule = Static<typeof Rule>;

const RULE_EXAMPLE = [
  { description: 'BNPL for French and Belgian shoppers, not on marketplace orders', partner: 'bnpl-sim', billing_countries: { allow: ['FR', 'BE'] }, marketplace: false },
  { partner: 'bnpl-sim', method: 'INSTALLMENTS_4X', amounts: { EUR: { min_amount: 20000 } } },
  { partner: '*', shipping_countries: { deny: ['RU', 'BY'] } },
  { partner: 'gift-sim', enabled: false },
];

export const PutRulesBody = Type.Object(
  { rules: Type.Array(Rule, { maxItems: 100, description: 'The whole rule set (replaces the current one); [] restores the defaults' }) },
  { additionalProperties: false, examples: [{ rules: RULE_EXAMPLE }] },
);
export type PutRulesBody = Static<typeof PutRulesBody>;

export const RuleSet = Type.Object(
  {
    entity_id: Uuid(),
    version: Type.Integer({ description: 'Number of times the rule set was replaced; 0 when it never was' }),
    updated_at: Type.Union([Timestamp(), Type.Null()], { description: 'null when the entity has never had rules' }),
    rules: Type.Array(Rule),
  },
  { description: 'The rule set of the entity', examples: [{ entity_id: '5b0f7c4e-3f55-4cc8-9a52-1d0f0c8f8a10', version: 3, updated_at: '2025-01-15T10:00:00.000Z', rules: RULE_EXAMPLE }] },
);

export const Solution = Type.Object({ partner: Type.String(), method: Type.String() });

export const EligibleSolutionsBody = Type.Object(
  {
    amount: Opt(Amount('Amount of the order in the minor unit of the currency: partner and rule amount bounds apply to it. ' +
      'Default: order.net_amount + order.tax_amount when the order has a net_amount; without either, amount bounds do not filter')),
    currency: Opt(Type.Unsafe<string>(Type.String({ enum: CURRENCIES, description: 'ISO 4217 code. Without it, currencies do not filter (nor do amount bounds, which are per currency)' }))),
    entity_id: Opt(Uuid('Defaults to the authenticated entity; any other value is refused (403)')),
    order: Opt(Type.Ref('Order')),
    customer: Opt(Type.Ref('Customer')),
  },
  {
    additionalProperties: false,
    examples: [{
      currency: 'EUR',
      order: {
        reference: 'order-42',
        net_amount: 12500,
        tax_amount: 2500,
        billing_address: { first_name: 'Ada', last_name: 'Lovelace', city: 'Paris', country_code: 'FR' },
        shipments: [{ shipping_address: { city: 'Lyon', country_code: 'FR' } }],
      },
      customer: { type: 'PERSON', email: 'ada@example.com' },
    }],
  },
);
export type EligibleSolutionsBody = Static<typeof EligibleSolutionsBody>;

export const EligibleSolutions = Type.Object(
  { eligible_solutions: Type.Array(Solution, { description: 'Eligible partner/method pairs, in the partners\' order (card-sim, gift-sim, bnpl-sim) then each partner\'s method order' }) },
  { description: 'The eligible solutions, in a stable order', examples: [{ eligible_solutions: [{ partner: 'card-sim', method: 'CARD' }, { partner: 'bnpl-sim', method: 'INSTALLMENTS_3X' }] }] },
);
