// Which partner/method pairs can pay an order: each partner's own limits (currency,
// amount bounds). Per-entity rules come on top of this (see the checkout issue).
import type { PartnerRegistry } from '../partners/port.ts';

export interface EligibilityQuery {
  amount: number;
  currency: string;
}

export interface Solution {
  partner: string;
  method: string;
}

export class EligibilityEngine {
  constructor(private readonly partners: PartnerRegistry) {}

  solutions(q: EligibilityQuery): Solution[] {
    const out: Solution[] = [];
    for (const c of this.partners.all()) {
      const { currencies, min_amount = 1, max_amount = Number.MAX_SAFE_INTEGER } = c.limits;
      if (!currencies.includes(q.currency) || q.amount < min_amount || q.amount > max_amount) continue;
      for (const method of c.methods) out.push({ partner: c.name, method });
    }
    return out;
  }
}
