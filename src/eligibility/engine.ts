// Which partner/method pairs can pay an order for an entity: each partner's own limits
// (currencies, amount bounds) and then the entity's rules (rules.ts), as the entity's
// rules service keeps them (rules.service.ts). Order of the answer: the partners' registration order
// (card-sim, gift-sim, bnpl-sim), then each partner's own method order.
import type { PartnerConnector, PartnerRegistry } from '../partners/port.ts';
import { allowedByRules, factsOf, refusingRule } from './rules.ts';
import type { EligibilityRulesService } from './rules.service.ts';

export interface EligibilityQuery {
  /** Minor units of `currency`; unknown: amount bounds do not filter. */
  amount: number | undefined;
  /** Unknown: currencies and amount bounds do not filter. */
  currency: string | undefined;
  /** An Order (common.schemas.ts): billing and shipping countries, marketplace sellers. */
  order?: unknown;
  /** A Customer: its type. */
  customer?: unknown;
}

export interface Solution {
  partner: string;
  method: string;
}

/** A partner's own limits; what the query does not say does not filter (Adyen's paymentMethods without an amount). */
function withinLimits(c: PartnerConnector, q: EligibilityQuery): boolean {
  const { currencies, min_amount = 1, max_amount = Number.MAX_SAFE_INTEGER } = c.limits;
  if (q.currency === undefined) return true;
  if (!currencies.includes(q.currency)) return false;
  return q.amount === undefined || (q.amount >= min_amount && q.amount <= max_amount);
}

/** A split part the rules refuse: its index in the split, the refusing rule's index in the rule set, and that rule in words. */
export interface RefusedPart {
  part: number;
  rule: number;
  says: string;
}

export class EligibilityEngine {
  constructor(
    private readonly partners: PartnerRegistry,
    private readonly rules: EligibilityRulesService,
  ) {}

  async solutions(entityId: string, q: EligibilityQuery): Promise<Solution[]> {
    const rules = await this.rules.rulesOf(entityId);
    const facts = factsOf(q);
    const out: Solution[] = [];
    for (const c of this.partners.all()) {
      if (!withinLimits(c, q) || (c.serves && !c.serves(entityId))) continue;
      for (const method of c.methods) {
        if (allowedByRules(rules, c.name, method, facts)) out.push({ partner: c.name, method });
      }
    }
    return out;
  }

  /**
   * The split parts (partner and method) the entity's rules do not allow for this order,
   * each with the first rule that refuses it (its index in the rule set and what it says):
   * the same rules as the widget's offer, applied to payments created through the API
   * (POST /v2/payments). Partner limits are checked by the payment's own validation.
   */
  async refusedParts(entityId: string, q: EligibilityQuery, parts: ReadonlyArray<{ partner: string; method: string }>): Promise<RefusedPart[]> {
    const rules = await this.rules.rulesOf(entityId);
    if (!rules.length) return [];
    const facts = factsOf(q);
    return parts.flatMap((p, part) => {
      const refusal = refusingRule(rules, p.partner, p.method, facts);
      return refusal ? [{ part, rule: refusal.index, says: refusal.says }] : [];
    });
  }
}
