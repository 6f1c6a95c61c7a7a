// gift-sim: a simulated gift-card processor. Cards hold a balance; an authorization
// holds the amount (no partial authorization), a void or refund gives it back.
import { createHash } from 'node:crypto';
import type { Queryable } from '../../platform/db/index.ts';
import type { AuthorizeRequest, GiftCardInstrument } from '../port.ts';
import type { SimOperation } from './ledger.repo.ts';
import { simRepo } from './ledger.repo.ts';
import { type Decision, SimulatedPartner } from './simulated-partner.ts';

/** Initial balance of a gift card the simulator has not seen yet (minor units). */
export function initialGiftBalance(number: string): number {
  if (number.endsWith('0000')) return 0;
  if (number.endsWith('0001')) return 1_000;
  return 50_000;
}

export class GiftCardSimulator extends SimulatedPartner {
  readonly name = 'gift-sim';
  readonly methods = ['GIFT_CARD'] as const;
  readonly limits = { currencies: ['EUR'], min_amount: 1, max_amount: 50_000 };

  private static cardId(number: string): string {
    return createHash('sha256').update(`gift-sim:${number}`).digest('hex');
  }

  protected async decide(req: AuthorizeRequest, tx: Queryable): Promise<Decision> {
    const instrument = req.instrument as GiftCardInstrument;
    if (instrument.pin === '0000') return { status: 'REFUSED', code: 'INVALID_PIN', description: 'The PIN is incorrect' };
    const card = GiftCardSimulator.cardId(instrument.number);
    const balance = await simRepo.giftBalance(tx, card, initialGiftBalance(instrument.number), req.currency);
    if (balance < req.amount) {
      return { status: 'REFUSED', code: 'INSUFFICIENT_FUNDS', description: `The gift card balance is ${balance}`, data: { card_id: card } };
    }
    // PIN 0408: the processor holds the amount but its answer is lost (payd sees a timeout).
    return { status: 'AUTHORIZED', code: 'SUCCEEDED', description: 'Approved', data: { card_id: card }, ...(instrument.pin === '0408' ? { timeout: true } : {}) };
  }

  protected override async onSettled(tx: Queryable, op: SimOperation, parent: SimOperation | undefined): Promise<void> {
    const cardId = String((parent ?? op).data.card_id ?? '');
    if (!cardId) return;
    if (op.kind === 'AUTHORIZATION') await simRepo.adjustGiftBalance(tx, cardId, -op.amount);
    if (op.kind === 'VOID' || op.kind === 'REFUND') await simRepo.adjustGiftBalance(tx, cardId, op.amount);
  }
}
