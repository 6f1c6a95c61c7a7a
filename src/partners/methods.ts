// What a payment method means, in one place: what a part of a payment paid with it
// carries, whether it may need the cardholder's authentication, in which order it is
// authorized and captured, what the shopper must give. Payments (validation, the order of
// a split), checkout (what the widget asks), eligibility and the dashboard read it here
// and nowhere else; a connector says only which methods it offers (port.ts `methods`)
// and, for what is the partner's own (a charge captured once), its own flags.
//
// A method not listed is OTHER: it carries no instrument, needs nothing from the shopper
// and ranks between gift cards and cards.

export type MethodFamily = 'CARD' | 'GIFT_CARD' | 'BNPL' | 'WALLET' | 'OTHER';

/** What the shopper must give for a method (checkout asks for it when the session lacks it). */
export type MethodRequirement = 'customer.email';

export interface MethodMeaning {
  readonly family: MethodFamily;
  /** The instrument a part paid with this method carries; undefined: none (the partner needs none). */
  readonly instrument: 'CARD' | 'GIFT_CARD' | undefined;
  /** A card kept on file (instrument SAVED_CARD) pays it too; allow_future_usage keeps its card. */
  readonly cardOnFile: boolean;
  /** At most one part of a payment uses it (one card per payment). */
  readonly onePerPayment: boolean;
  /**
   * The issuer may ask for the cardholder's authentication (3-D Secure), which suspends the
   * authorization: such parts are authorized last, after every other part of the split.
   */
  readonly mayNeedAuthentication: boolean;
  /** Captured in several parts unless its partner says otherwise (PartnerConnector.capturesOnce). */
  readonly capturableManyTimes: boolean;
  readonly refundable: boolean;
  /**
   * Order of a split: authorizations and captures take the lower ranks first (gift cards
   * 0, whose balance decides early and is consumed first; others 1; cards 2, which may
   * suspend on a challenge); refunds and voids go the other way (money back to the card first).
   */
  readonly rank: 0 | 1 | 2;
  readonly requires: readonly MethodRequirement[];
}

const CARD: MethodMeaning = {
  family: 'CARD', instrument: 'CARD', cardOnFile: true, onePerPayment: true, mayNeedAuthentication: true,
  capturableManyTimes: true, refundable: true, rank: 2, requires: [],
};
const GIFT_CARD: MethodMeaning = {
  family: 'GIFT_CARD', instrument: 'GIFT_CARD', cardOnFile: false, onePerPayment: false, mayNeedAuthentication: false,
  capturableManyTimes: true, refundable: true, rank: 0, requires: [],
};
/** Buy now, pay later: the provider runs its own check on the customer, by email. */
const BNPL: MethodMeaning = {
  family: 'BNPL', instrument: undefined, cardOnFile: false, onePerPayment: false, mayNeedAuthentication: false,
  capturableManyTimes: true, refundable: true, rank: 1, requires: ['customer.email'],
};
const OTHER: MethodMeaning = {
  family: 'OTHER', instrument: undefined, cardOnFile: false, onePerPayment: false, mayNeedAuthentication: false,
  capturableManyTimes: true, refundable: true, rank: 1, requires: [],
};

/** The methods payd knows, by the name a split part and an eligibility rule give. */
export const METHODS: Readonly<Record<string, MethodMeaning>> = {
  CARD,
  GIFT_CARD,
  INSTALLMENTS_3X: BNPL,
  INSTALLMENTS_4X: BNPL,
};

/** What the method means; OTHER for a method payd does not list. */
export function methodMeaning(method: string): MethodMeaning {
  return Object.hasOwn(METHODS, method) ? METHODS[method]! : OTHER;
}

/** The method names payd knows (the dashboard's filter, the docs). */
export const METHOD_NAMES: readonly string[] = Object.keys(METHODS);
