// Checks of a rule set beyond its schema: names the partner registry must know, bounds
// that must be ordered, lists that must not contradict each other. Every finding names
// its field (rules[2].amounts.EUR.min_amount); one refusal lists them all.
import type { PartnerRegistry } from '../partners/port.ts';
import { type InvalidParam, problems } from '../platform/http/problem.ts';
import type { Rule } from './eligibility.schemas.ts';

type Bounds = { min_amount?: number; max_amount?: number };
const CONDITIONS = ['currencies', 'amounts', 'billing_countries', 'shipping_countries', 'marketplace', 'customer_types'] as const;

function checkTarget(rule: Rule, at: string, partners: PartnerRegistry, out: InvalidParam[]): void {
  const known = partners.all();
  const partner = rule.partner !== undefined && rule.partner !== '*' ? partners.get(rule.partner) : undefined;
  if (rule.partner !== undefined && rule.partner !== '*' && !partner) {
    out.push({ name: `${at}.partner`, in: 'body', reason: `is not a known partner (known: ${known.map((p) => p.name).join(', ')}, or *)` });
    return;
  }
  if (rule.method === undefined || rule.method === '*') return;
  if (partner && !partner.methods.includes(rule.method)) {
    out.push({ name: `${at}.method`, in: 'body', reason: `is not a method of ${partner.name} (its methods: ${partner.methods.join(', ')}, or *)` });
  } else if (!partner && !known.some((p) => p.methods.includes(rule.method!))) {
    const all = [...new Set(known.flatMap((p) => p.methods))];
    out.push({ name: `${at}.method`, in: 'body', reason: `is not a method of any partner (known: ${all.join(', ')}, or *)` });
  }
}

function checkConditions(rule: Rule, at: string, out: InvalidParam[]): void {
  if (rule.enabled === false) {
    const present = CONDITIONS.filter((c) => rule[c] !== undefined);
    if (present.length) out.push({ name: `${at}.enabled`, in: 'body', reason: `a disabled rule takes no conditions (found ${present.join(', ')})` });
  }
  for (const [currency, b] of Object.entries((rule.amounts ?? {}) as Record<string, Bounds | undefined>)) {
    if (!b) continue;
    if (b.min_amount !== undefined && b.max_amount !== undefined && b.min_amount > b.max_amount) {
      out.push({ name: `${at}.amounts.${currency}.min_amount`, in: 'body', reason: `must not exceed max_amount (${b.min_amount} > ${b.max_amount})` });
    }
    if (rule.currencies && !rule.currencies.includes(currency)) {
      out.push({ name: `${at}.amounts.${currency}`, in: 'body', reason: 'bounds a currency that is not in currencies (it could never apply)' });
    }
  }
  for (const field of ['billing_countries', 'shipping_countries'] as const) {
    const lists = rule[field];
    const both = lists?.deny?.filter((c) => lists.allow?.includes(c)) ?? [];
    if (both.length) out.push({ name: `${at}.${field}.deny`, in: 'body', reason: `lists ${both.join(', ')}, also in allow` });
  }
}

/** Throws a 400 problem naming every invalid field of the rule set. */
export function validateRules(rules: readonly Rule[], partners: PartnerRegistry): void {
  const out: InvalidParam[] = [];
  rules.forEach((rule, i) => {
    checkTarget(rule, `rules[${i}]`, partners, out);
    checkConditions(rule, `rules[${i}]`, out);
  });
  if (out.length) {
    throw problems.invalidRequest(`The rule set is invalid: ${out.map((p) => `${p.name} ${p.reason}`).join('; ')}`, out);
  }
}
