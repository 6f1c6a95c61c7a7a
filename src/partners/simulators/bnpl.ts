// bnpl-sim: a simulated buy-now-pay-later provider (3 or 4 instalments). It accepts
// amounts between 50.00 and 3000.00 EUR and refuses customers whose email contains
// "refuse" (a stand-in for its risk check); an email containing "timeout" is accepted
// but its answer is lost (the outcome comes with a later sync or notification).
import type { AuthorizeRequest } from '../port.ts';
import { type Decision, SimulatedPartner } from './simulated-partner.ts';

export class BnplSimulator extends SimulatedPartner {
  protected override readonly stateless = true;
  readonly name = 'bnpl-sim';
  readonly methods = ['INSTALLMENTS_3X', 'INSTALLMENTS_4X'] as const;
  readonly limits = { currencies: ['EUR'], min_amount: 5_000, max_amount: 300_000 };

  protected async decide(req: AuthorizeRequest): Promise<Decision> {
    return this.decideNow(req);
  }

  protected override decideNow(req: AuthorizeRequest): Decision {
    if (req.amount < this.limits.min_amount || req.amount > this.limits.max_amount) {
      return { status: 'REFUSED', code: 'AMOUNT_OUT_OF_BOUNDS', description: `Amounts from ${this.limits.min_amount} to ${this.limits.max_amount} only` };
    }
    const email = String(req.customer?.email ?? '');
    if (!email) return { status: 'REFUSED', code: 'CUSTOMER_REQUIRED', description: 'The customer email is required' };
    if (email.includes('refuse')) return { status: 'REFUSED', code: 'RISK_DECLINED', description: 'The provider declined the customer' };
    // An email containing "timeout": the plan is accepted but the answer is lost (payd sees a timeout).
    return { status: 'AUTHORIZED', code: 'SUCCEEDED', description: 'Instalment plan accepted', ...(email.includes('timeout') ? { timeout: true } : {}) };
  }
}
