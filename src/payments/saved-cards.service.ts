// Saved cards (cards on file; docs/decisions.md "Saved cards"): reading, listing and
// deleting a customer's saved cards, and the saved cards a new payment names (its
// SAVED_CARD instruments), checked before anything is written. No HTTP and no SQL here.
import type { Db } from '../platform/db/index.ts';
import { problems } from '../platform/http/problem.ts';
import type { CardDetails, CardInstrument, PartnerRegistry, SavedCardInstrument } from '../partners/port.ts';
import { cardDetails } from './cards.ts';
import { methodMeaning } from '../partners/methods.ts';
import type { CreatePaymentBody, SplitPart } from './payments.schemas.ts';
import { type SavedCardRow, savedCardsRepo } from './saved-cards.repo.ts';

export { SAVED_CARDS_LIST_LIMIT } from './saved-cards.repo.ts';

export function savedCardView(r: SavedCardRow) {
  return {
    id: r.id,
    entity_id: r.entity_id,
    partner: r.partner,
    customer: {
      ...(r.customer_reference !== null ? { reference: r.customer_reference } : {}),
      ...(r.customer_email !== null ? { email: r.customer_email } : {}),
    },
    card: {
      bin: r.bin,
      type: r.funding_type,
      last_four_digits: r.last_four_digits,
      expiry_month: r.expiry_month,
      expiry_year: r.expiry_year,
      fingerprint: r.fingerprint,
      selected_network: r.selected_network,
      ...(r.country_code !== null ? { country_code: r.country_code } : {}),
      ...(r.holder_name !== null ? { holder_name: r.holder_name } : {}),
    },
    created_at: r.created_at,
  };
}
export type SavedCardView = ReturnType<typeof savedCardView>;

/** Whether a card with this expiry (MM, YYYY) can no longer be used at `now` (it is valid through its month). */
export function cardExpired(month: string, year: string, now: number): boolean {
  return Date.UTC(Number(year), Number(month), 1) <= now;
}

/** A saved card as a payment's partner receives it: the partner's reference, and the card facts payd keeps. */
export interface KeptCard {
  instrument: SavedCardInstrument;
  card: CardDetails;
}

/**
 * The saved cards the split's SAVED_CARD instruments name, each checked: the entity's
 * and not deleted (else the bodiless 404, as for an unknown client_session_id), kept by
 * the part's partner, not expired at `now`, the payment's customer's when the payment
 * names one, no CVC with a merchant-initiated payment, no save_token. Keyed by the part.
 */
export async function keptCards(db: Db, entityId: string, body: CreatePaymentBody, now: number): Promise<Map<SplitPart, KeptCard>> {
  const out = new Map<SplitPart, KeptCard>();
  const named = body.split.flatMap((part, i) => (part.instrument?.type === 'SAVED_CARD' ? [{ part, i, instrument: part.instrument }] : []));
  if (named.length === 0) return out;
  const rows = await savedCardsRepo.getMany(db, entityId, named.map((n) => n.instrument.saved_card_id.toLowerCase()));
  for (const { part, i, instrument } of named) {
    const name = `split[${i}]`;
    const row = rows.find((r) => r.id === instrument.saved_card_id.toLowerCase());
    if (!row) throw problems.notFoundNoBody();
    if (row.partner !== part.partner) {
      throw problems.invalidField(`${name}.partner`, `the saved card is kept by partner ${row.partner}; a payment with it goes to that partner`);
    }
    if (cardExpired(row.expiry_month, row.expiry_year, now)) {
      throw problems.invalidField(`${name}.instrument.saved_card_id`, `the saved card expired at the end of ${row.expiry_month}/${row.expiry_year}`);
    }
    const reference = body.customer?.reference;
    const email = body.customer?.email?.toLowerCase();
    if ((reference !== undefined && row.customer_reference !== null && reference !== row.customer_reference)
      || (email !== undefined && row.customer_email !== null && email !== row.customer_email)) {
      throw problems.invalidField(`${name}.instrument.saved_card_id`, 'the saved card belongs to another customer');
    }
    const initiator = instrument.initiator ?? (instrument.cvv !== undefined ? 'CUSTOMER' : 'MERCHANT');
    if (initiator === 'MERCHANT' && instrument.cvv !== undefined) {
      throw problems.invalidField(`${name}.instrument.cvv`, 'a merchant-initiated payment has no cardholder, so no CVC');
    }
    if (part.save_token) throw problems.invalidField(`${name}.save_token`, 'the card is saved already');
    out.set(part, {
      instrument: { type: 'SAVED_CARD', reference: row.partner_reference, initiator, ...(instrument.cvv !== undefined ? { cvv: instrument.cvv } : {}) },
      card: {
        bin: row.bin, type: row.funding_type, last_four_digits: row.last_four_digits, expiry_month: row.expiry_month, expiry_year: row.expiry_year,
        fingerprint: row.fingerprint, selected_network: row.selected_network,
        ...(row.country_code !== null ? { country_code: row.country_code } : {}),
        ...(row.holder_name !== null ? { holder_name: row.holder_name } : {}),
        saved_card_id: row.id,
      },
    });
  }
  return out;
}

/**
 * The card facts of the split's card parts that save a card (save_token, or
 * allow_future_usage) which the payment's customer saved at that partner already (the same
 * fingerprint): they carry that saved card's id, so the card saved again is merged into it
 * (one saved card, same id, the new expiry and partner reference; migration 0050) instead
 * of a second one. Parts without such a card are absent (the caller computes their facts).
 * A payment without a customer merges nothing.
 */
export async function savedAgain(db: Db, fingerprintKey: Buffer, entityId: string, body: CreatePaymentBody): Promise<Map<SplitPart, CardDetails>> {
  const out = new Map<SplitPart, CardDetails>();
  const customer = { reference: body.customer?.reference ?? null, email: body.customer?.email?.toLowerCase() ?? null };
  if (customer.reference === null && customer.email === null) return out;
  for (const part of body.split) {
    const saves = part.save_token ?? (body.allow_future_usage === true && methodMeaning(part.method).cardOnFile);
    if (!saves || part.instrument?.type !== 'CARD') continue;
    const card = cardDetails(fingerprintKey, entityId, part.instrument as CardInstrument);
    const same = await savedCardsRepo.findSame(db, entityId, part.partner, customer, card.fingerprint);
    if (same) out.set(part, { ...card, saved_card_id: same.id });
  }
  return out;
}

export class SavedCardsService {
  constructor(
    private readonly db: Db,
    private readonly partners: PartnerRegistry,
  ) {}

  async get(entityId: string, id: string): Promise<SavedCardView> {
    const row = await savedCardsRepo.get(this.db, entityId, id);
    if (!row) throw problems.notFoundNoBody();
    return savedCardView(row);
  }

  /** A customer's saved cards, by customer.reference or customer.email (exactly one). */
  async list(entityId: string, by: { customer_reference?: string | undefined; customer_email?: string | undefined }): Promise<SavedCardView[]> {
    if ((by.customer_reference === undefined) === (by.customer_email === undefined)) {
      throw problems.invalidField('customer_reference', 'name the customer by exactly one of customer_reference and customer_email', 'query');
    }
    const rows = await savedCardsRepo.list(this.db, entityId, by.customer_reference !== undefined ? { reference: by.customer_reference } : { email: by.customer_email! });
    return rows.map(savedCardView);
  }

  /**
   * Deletes a saved card: payd's row is marked deleted (a payment with it is then a 404),
   * and its partner is asked to forget the card (best effort: a partner that fails to
   * answer keeps a card payd will never name again).
   */
  async delete(entityId: string, id: string): Promise<SavedCardView> {
    const row = await savedCardsRepo.delete(this.db, entityId, id);
    if (!row) throw problems.notFoundNoBody();
    const connector = this.partners.get(row.partner);
    try {
      await connector?.forgetCard?.({ entityId, reference: row.partner_reference });
    } catch {
      // best effort (see above)
    }
    return savedCardView(row);
  }
}
