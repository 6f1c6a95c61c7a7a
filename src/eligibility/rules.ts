// What a rule means, as pure functions (no I/O). Semantics (docs/eligibility.md):
// - A rule targets the solutions whose partner and method match its `partner` and
//   `method` (absent or "*" matches any).
// - Rules only restrict: a solution is eligible when its partner's own limits allow the
//   order AND every rule that targets it holds. A solution no rule targets keeps the
//   default (eligible within the partner's limits); an entity without rules gets the
//   defaults for every solution. Rule order does not matter.
// - Within a rule every condition present must hold. An allow list needs a known value
//   (no billing country: an allow list of billing countries does not hold); a deny list
//   passes an unknown value.
import type { Rule } from './eligibility.schemas.ts';

/** The facts of an order that rules look at, read defensively from the request or a stored session. */
export interface OrderFacts {
  /** Unknown (an eligibility question without amount): amount bounds do not filter. */
  amount: number | undefined;
  /** Unknown: currency conditions and amount bounds do not filter. */
  currency: string | undefined;
  billingCountry: string | undefined;
  shippingCountries: string[];
  marketplace: boolean;
  customerType: string | undefined;
}

const obj = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

export function factsOf(q: { amount: number | undefined; currency: string | undefined; order?: unknown; customer?: unknown }): OrderFacts {
  const order = obj(q.order);
  const shipments = arr(order?.shipments).map(obj);
  const shippingCountries = [
    ...new Set(shipments.map((s) => str(obj(s?.shipping_address)?.country_code)).filter((c): c is string => c !== undefined)),
  ];
  const sellerLines = shipments.flatMap((s) => arr(s?.item_lines)).some((l) => obj(l)?.is_marketplace_seller === true);
  return {
    amount: q.amount,
    currency: q.currency,
    billingCountry: str(obj(order?.billing_address)?.country_code),
    shippingCountries,
    marketplace: arr(order?.marketplace_sellers).length > 0 || sellerLines,
    customerType: str(obj(q.customer)?.type),
  };
}

const matches = (pattern: string | undefined, value: string) => pattern === undefined || pattern === '*' || pattern === value;

export function targets(rule: Rule, partner: string, method: string): boolean {
  return matches(rule.partner, partner) && matches(rule.method, method);
}

const list = (xs: readonly string[]) => xs.join(', ');

/** Why a list of countries does not pass `lists` (undefined: it passes). */
function countriesFail(lists: Rule['billing_countries'], countries: string[], what: string): string | undefined {
  if (!lists) return undefined;
  const seen = countries.length ? `this order: ${list(countries)}` : `this order has no ${what.replace(/ies$/, 'y')}`;
  if (lists.allow && (countries.length === 0 || countries.some((c) => !lists.allow!.includes(c)))) return `allowed only for ${what} ${list(lists.allow)} (${seen})`;
  if (lists.deny && countries.some((c) => lists.deny!.includes(c))) return `not allowed for ${what} ${list(lists.deny)} (${seen})`;
  return undefined;
}

/**
 * The first condition of the rule that does not hold for these facts, in words (its
 * targets are not named: see describeTargets); undefined when every condition holds.
 */
export function failedCondition(rule: Rule, f: OrderFacts): string | undefined {
  if (rule.enabled === false) return 'switched off (enabled: false)';
  if (f.currency !== undefined) {
    if (rule.currencies && !rule.currencies.includes(f.currency)) return `allowed only in ${list(rule.currencies)} (this payment: ${f.currency})`;
    const bounds = (rule.amounts as Record<string, { min_amount?: number; max_amount?: number } | undefined> | undefined)?.[f.currency];
    if (f.amount !== undefined && bounds?.min_amount !== undefined && f.amount < bounds.min_amount) {
      return `allowed only from ${bounds.min_amount} ${f.currency} minor units (this payment: ${f.amount})`;
    }
    if (f.amount !== undefined && bounds?.max_amount !== undefined && f.amount > bounds.max_amount) {
      return `allowed only up to ${bounds.max_amount} ${f.currency} minor units (this payment: ${f.amount})`;
    }
  }
  const billing = countriesFail(rule.billing_countries, f.billingCountry ? [f.billingCountry] : [], 'billing countries');
  if (billing) return billing;
  const shipping = countriesFail(rule.shipping_countries, f.shippingCountries, 'shipping countries');
  if (shipping) return shipping;
  if (rule.marketplace === true && !f.marketplace) return 'allowed only on marketplace orders (this order is not one)';
  if (rule.marketplace === false && f.marketplace) return 'not allowed on marketplace orders (this order is one)';
  if (rule.customer_types && !(f.customerType && (rule.customer_types as string[]).includes(f.customerType))) {
    return `allowed only for customer types ${list(rule.customer_types)} (${f.customerType ? `this customer: ${f.customerType}` : 'this customer has no type'})`;
  }
  return undefined;
}

/** Whether every condition of the rule holds for these facts. */
export function holds(rule: Rule, f: OrderFacts): boolean {
  return failedCondition(rule, f) === undefined;
}

/** What a rule targets, in words: "bnpl-sim", "card-sim/CARD", "method INSTALLMENTS_3X", "every solution". */
export function describeTargets(rule: Rule): string {
  const p = rule.partner === undefined || rule.partner === '*' ? undefined : rule.partner;
  const m = rule.method === undefined || rule.method === '*' ? undefined : rule.method;
  if (p && m) return `${p}/${m}`;
  if (p) return p;
  if (m) return `method ${m}`;
  return 'every solution';
}

/**
 * The first rule (by its index in the rule set) that targets the solution and does not
 * hold, with the condition that fails in words; undefined when the rules allow it.
 */
export function refusingRule(rules: readonly Rule[], partner: string, method: string, f: OrderFacts): { index: number; says: string } | undefined {
  for (const [index, r] of rules.entries()) {
    if (!targets(r, partner, method)) continue;
    const failed = failedCondition(r, f);
    if (failed) return { index, says: `${describeTargets(r)} ${failed}` };
  }
  return undefined;
}

/** A solution is allowed by the rules when every rule that targets it holds. */
export function allowedByRules(rules: readonly Rule[], partner: string, method: string, f: OrderFacts): boolean {
  return rules.every((r) => !targets(r, partner, method) || holds(r, f));
}
