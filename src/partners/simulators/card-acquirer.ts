// card-sim: a simulated card acquirer with 3-D Secure. The test card number decides
// the outcome, like Stripe's test cards (docs/test-cards.md lists them).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AuthorizeRequest, CardDetails, CardInstrument } from '../port.ts';
import { acsRoutes } from './acs.routes.ts';
import { type Decision, SimulatedPartner } from './simulated-partner.ts';

export interface TestCard {
  number: string;
  behaviour: string;
  decision: Omit<Decision, 'data'> & { challenge?: boolean };
}

const ok = (flags?: Record<string, boolean>): TestCard['decision'] => ({ status: 'AUTHORIZED', code: 'SUCCEEDED', description: 'Approved', ...(flags ? { flags } : {}) });

export const TEST_CARDS: TestCard[] = [
  { number: '4242424242424242', behaviour: 'Visa: authorized (3-D Secure frictionless)', decision: ok() },
  { number: '5555555555554444', behaviour: 'Mastercard: authorized (3-D Secure frictionless)', decision: ok() },
  { number: '4000000000003220', behaviour: '3-D Secure challenge required, then authorized or refused by the shopper', decision: { status: 'CHALLENGE_REQUIRED', code: 'CHALLENGE_REQUIRED', description: 'The issuer requires a 3-D Secure challenge', challenge: true } },
  { number: '4000000000000002', behaviour: 'Declined (do not honor)', decision: { status: 'REFUSED', code: 'DO_NOT_HONOR', description: 'The issuer declined the authorization' } },
  { number: '4000000000009995', behaviour: 'Declined: insufficient funds', decision: { status: 'REFUSED', code: 'INSUFFICIENT_FUNDS', description: 'Insufficient funds' } },
  { number: '4000000000000069', behaviour: 'Declined: expired card', decision: { status: 'REFUSED', code: 'EXPIRED_CARD', description: 'The card has expired' } },
  { number: '4000000000000127', behaviour: 'Declined: incorrect CVV', decision: { status: 'REFUSED', code: 'INCORRECT_CVV', description: 'The CVV is incorrect' } },
  { number: '4000000000000119', behaviour: 'Acquirer processing error', decision: { status: 'ERROR', code: 'PROCESSING_ERROR', description: 'An error occurred at the acquirer' } },
  { number: '4000000000000408', behaviour: 'Authorization times out; sync later shows it authorized', decision: { ...ok(), timeout: true } },
  { number: '4000000000000341', behaviour: 'Authorized; every capture is declined', decision: ok({ fail_capture: true }) },
  { number: '4000000000005126', behaviour: 'Authorized; every refund is declined', decision: ok({ fail_refund: true }) },
  { number: '4000000000000416', behaviour: 'Authorized; captures time out, sync later shows them succeeded', decision: ok({ timeout_capture: true }) },
];

const BY_NUMBER = new Map(TEST_CARDS.map((c) => [c.number, c]));

/** The simulated issuer's country by BIN (test data of the simulator, not a real BIN table). */
function issuerCountry(bin: string): string {
  if (bin.startsWith('4970') || bin.startsWith('5132')) return 'FR';
  if (bin.startsWith('4000')) return 'US';
  return 'GB';
}

/** The simulated funding type: the debit test cards are debit, the rest credit. */
const DEBIT = new Set(['4000056655665556', '5200828282828210']);

export class CardAcquirerSimulator extends SimulatedPartner {
  protected override readonly stateless = true;
  readonly name = 'card-sim';
  readonly methods = ['CARD'] as const;
  readonly limits = { currencies: ['EUR', 'USD', 'GBP', 'CHF', 'JPY'], min_amount: 1, max_amount: 10_000_000 };

  /** Its 3-D Secure challenge page (/sim/acs/{ref}), where challenge redirections lead. */
  registerRoutes(app: FastifyInstance): Promise<void> {
    return acsRoutes(app, this);
  }

  protected async decide(req: AuthorizeRequest): Promise<Decision> {
    return this.decideNow(req);
  }

  protected override decideNow(req: AuthorizeRequest): Decision {
    const instrument = req.instrument as CardInstrument;
    // The acquirer tells what payd cannot know from the number: funding type and country.
    const card: CardDetails | undefined = req.card && {
      ...req.card,
      type: DEBIT.has(instrument.number) ? 'DEBIT' : 'CREDIT',
      country_code: issuerCountry(req.card.bin),
      three_ds: {
        eci: '05',
        version: '2.2.0',
        flow: 'FRICTIONLESS',
        ds_transaction_id: randomUUID(),
        acs_transaction_id: randomUUID(),
      },
    };
    const test = BY_NUMBER.get(instrument.number);
    // Any other Luhn-valid number behaves like a plain approved card.
    let decision: TestCard['decision'] = test?.decision ?? ok();
    const expiry = new Date(Date.UTC(Number(instrument.expiry_year), Number(instrument.expiry_month), 1));
    if (expiry.getTime() <= Date.now()) {
      decision = { status: 'REFUSED', code: 'EXPIRED_CARD', description: 'The card has expired' };
    }
    if (decision.challenge && req.three_ds?.challenge_indicator === 'NO_CHALLENGE_REQUESTED' && req.three_ds?.challenge_exemption === 'LOW_VALUE' && req.amount <= 3000) {
      // A low-value exemption the issuer accepts: no challenge.
      decision = ok();
    }
    if (decision.challenge && card?.three_ds) card.three_ds.flow = 'CHALLENGE';
    return Object.assign({}, decision, { data: card ? { card } : {} }); // (not a spread: see newTxRow)
  }
}
