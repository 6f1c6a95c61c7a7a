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

function countriesHold(lists: Rule['billing_countries'], countries: string[]): boolean {
  if (!lists) return true;
  if (lists.allow && (countries.length === 0 || countries.some((c) => !lists.allow!.includes(c)))) return false;
  if (lists.deny && countries.some((c) => lists.deny!.includes(c))) return false;
  return true;
}

/** Whether every condition of the rule holds for these facts. */
export function holds(rule: Rule, f: OrderFacts): boolean {
  if (rule.enabled === false) return false;
  if (f.currency !== undefined) {
    if (rule.currencies && !rule.currencies.includes(f.currency)) return false;
    const bounds = (rule.amounts as Record<string, { min_amount?: number; max_amount?: number } | undefined> | undefined)?.[f.currency];
    if (f.amount !== undefined && bounds?.min_amount !== undefined && f.amount < bounds.min_amount) return false;
    if (f.amount !== undefined && bounds?.max_amount !== undefined && f.amount > bounds.max_amount) return false;
  }
  if (!countriesHold(rule.billing_countries, f.billingCountry ? [f.billingCountry] : [])) return false;
  if (!countriesHold(rule.shipping_countries, f.shippingCountries)) return false;
  if (rule.marketplace !== undefined && rule.marketplace !== f.marketplace) return false;
  if (rule.customer_types && !(f.customerType && (rule.customer_types as string[]).includes(f.customerType))) return false;
  return true;
}

/** A solution is allowed by the rules when every rule that targets it holds. */
export function allowedByRules(rules: readonly Rule[], partner: string, method: string, f: OrderFacts): boolean {
  return rules.every((r) => !targets(r, partner, method) || holds(r, f));
}
