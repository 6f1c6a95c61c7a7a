// card-sim: a simulated card acquirer with 3-D Secure. The test card number decides
// the outcome, like Stripe's test cards (docs/test-cards.md lists them).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Queryable } from '../../platform/db/index.ts';
import type { AuthorizeRequest, CardDetails, CardInstrument, SavedCardInstrument } from '../port.ts';
import { simRepo } from './ledger.repo.ts';
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
  { number: '4000000000000770', behaviour: 'Authorized; every void is declined', decision: ok({ fail_void: true }) },
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

  protected async decide(req: AuthorizeRequest, q: Queryable): Promise<Decision> {
    if (req.instrument.type === 'SAVED_CARD') return this.decideSaved(req, req.instrument, q);
    return this.decideNow(req);
  }

  protected override decideNow(req: AuthorizeRequest): Decision {
    const instrument = req.instrument as CardInstrument;
    const test = BY_NUMBER.get(instrument.number);
    // Any other Luhn-valid number behaves like a plain approved card.
    const behaviour: TestCard['decision'] = test?.decision ?? ok();
    const d = this.decision(req, behaviour, { funding: DEBIT.has(instrument.number) ? 'DEBIT' : 'CREDIT', expiry_month: instrument.expiry_month, expiry_year: instrument.expiry_year, threeDs: true });
    // A card kept on file keeps the behaviour of its number (never the number itself).
    if (req.save_token) Object.assign(d.data!, { behaviour, funding: DEBIT.has(instrument.number) ? 'DEBIT' : 'CREDIT' });
    return d;
  }

  /**
   * An authorization with a saved card: the card this acquirer kept with the
   * authorization `instrument.reference` (saved with save_token, authorized, not
   * forgotten), with the behaviour of its original number. A merchant-initiated payment
   * is never challenged (the cardholder is absent: no 3-D Secure); a customer-initiated
   * one follows the card's 3-D Secure rules like the number did.
   */
  private async decideSaved(req: AuthorizeRequest, instrument: SavedCardInstrument, q: Queryable): Promise<Decision> {
    const saved = await simRepo.byReference(q, this.name, instrument.reference);
    if (!saved || saved.kind !== 'AUTHORIZATION' || saved.status !== 'AUTHORIZED' || saved.data.save_token !== true || saved.data.forgotten === true) {
      return { status: 'REFUSED', code: 'INVALID_TOKEN', description: 'No card is kept under this reference', data: { initiator: instrument.initiator } };
    }
    const kept = saved.data.card as CardDetails;
    const behaviour = (saved.data.behaviour ?? ok()) as TestCard['decision'];
    const merchant = instrument.initiator === 'MERCHANT';
    const d = this.decision(req, merchant && behaviour.challenge ? ok(behaviour.flags) : behaviour,
      { funding: String(saved.data.funding ?? kept.type), expiry_month: kept.expiry_month, expiry_year: kept.expiry_year, threeDs: !merchant });
    Object.assign(d.data!, { initiator: instrument.initiator, saved_card: instrument.reference });
    return d;
  }

  /** The decision for a card of this behaviour: expiry, the low-value exemption, the card facts this acquirer adds. */
  private decision(req: AuthorizeRequest, behaviour: TestCard['decision'],
    c: { funding: string; expiry_month: string; expiry_year: string; threeDs: boolean }): Decision {
    // The acquirer tells what payd cannot know from the number: funding type and country.
    const card: CardDetails | undefined = req.card && {
      ...req.card,
      type: c.funding,
      country_code: issuerCountry(req.card.bin),
      ...(c.threeDs ? {
        three_ds: {
          eci: '05',
          version: '2.2.0',
          flow: 'FRICTIONLESS' as const,
          ds_transaction_id: randomUUID(),
          acs_transaction_id: randomUUID(),
        },
      } : {}),
    };
    if (card && !c.threeDs) delete card.three_ds;
    let decision = behaviour;
    const expiry = new Date(Date.UTC(Number(c.expiry_year), Number(c.expiry_month), 1));
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

  /** Forgets a saved card (its reference then authorizes nothing). */
  async forgetCard(req: { entityId: string; reference: string }): Promise<void> {
    await simRepo.patchData(this.db, this.name, req.reference, { forgotten: true });
  }
}
