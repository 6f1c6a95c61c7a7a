// Shortcuts of the eligibility tests: set an entity's rules, ask for eligible solutions.
import assert from 'node:assert/strict';
import type { Merchant, TestApp } from '../helpers/app.ts';

export const ALL = ['card-sim/CARD', 'gift-sim/GIFT_CARD', 'bnpl-sim/INSTALLMENTS_3X', 'bnpl-sim/INSTALLMENTS_4X'];

export const pairs = (solutions: Array<{ partner: string; method: string }>) => solutions.map((s) => `${s.partner}/${s.method}`);

export function rulesUrl(entityId: string): string {
  return `/admin/v1/entities/${entityId}/eligibility-rules`;
}

export function putRules(t: TestApp, entityId: string, rules: unknown) {
  return t.app.inject({ method: 'PUT', url: rulesUrl(entityId), headers: t.adminHeaders, payload: { rules } });
}

export async function setRules(t: TestApp, m: Merchant, rules: unknown[]): Promise<void> {
  const res = await putRules(t, m.entityId, rules);
  assert.equal(res.statusCode, 200, res.body);
}

export function askSolutions(t: TestApp, m: Merchant, payload: unknown) {
  return t.app.inject({ method: 'POST', url: '/v2/eligible-solutions', headers: m.auth, payload: payload as Record<string, unknown> });
}

/** The eligible pairs for an order, asserting a 200. */
export async function eligible(t: TestApp, m: Merchant, body: Record<string, unknown> = {}): Promise<string[]> {
  const res = await askSolutions(t, m, { amount: 10_000, currency: 'EUR', ...body });
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(Object.keys(res.json()), ['eligible_solutions']);
  return pairs(res.json().eligible_solutions);
}

/** An order billed to one country and shipped to others. */
export function orderIn(billing?: string, ...shipping: string[]) {
  return {
    ...(billing ? { billing_address: { city: 'X', country_code: billing } } : {}),
    ...(shipping.length ? { shipments: shipping.map((c) => ({ shipping_address: { city: 'Y', country_code: c } })) } : {}),
  };
}
