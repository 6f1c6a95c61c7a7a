// The card simulator keeps cards (save_token) like an acquirer: the behaviour of the
// original test number (never the number), honoured when payd pays with the reference of
// the authorization that saved it; 3-D Secure for a customer-initiated payment as the
// number required, none for a merchant-initiated one; a forgotten card authorizes
// nothing. Calls straight to the connector (no payd).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AuthorizeRequest, CardDetails } from '../../src/partners/port.ts';
import { CardAcquirerSimulator } from '../../src/partners/simulators/index.ts';
import { answerInline } from '../../src/partners/inline.ts';
import { cardDetails, fingerprintKey } from '../../src/payments/cards.ts';
import { createTestDb, type TestDb } from '../helpers/db.ts';

const FP = fingerprintKey(Buffer.alloc(32, 9));
const ENTITY = randomUUID();
const year = String(new Date().getFullYear() + 3);

describe('card simulator: saved cards', () => {
  let db: TestDb;
  let sim: CardAcquirerSimulator;
  before(async () => {
    db = await createTestDb();
    sim = new CardAcquirerSimulator(db.db, { baseUrl: 'http://payd.test' });
  });
  after(() => db.close());

  const save = (number: string): AuthorizeRequest => {
    const instrument = { type: 'CARD' as const, number, expiry_month: '09', expiry_year: year, cvv: '123' };
    return { key: randomUUID(), entityId: ENTITY, method: 'CARD', amount: 1000, currency: 'EUR', instrument, card: cardDetails(FP, ENTITY, instrument), save_token: true, return_url: 'http://payd.test/r' };
  };
  const withSaved = (reference: string, card: CardDetails | undefined, initiator: 'CUSTOMER' | 'MERCHANT', amount = 2000): AuthorizeRequest => ({
    key: randomUUID(), entityId: ENTITY, method: 'CARD', amount, currency: 'EUR',
    instrument: { type: 'SAVED_CARD', reference, initiator, ...(initiator === 'CUSTOMER' ? { cvv: '321' } : {}) },
    ...(card ? { card: { ...card, saved_card_id: randomUUID() } } : {}), return_url: 'http://payd.test/r',
  });

  it('a card to keep, or a kept card, is never answered inline (the partner holds something)', () => {
    const req = save('4242424242424242');
    assert.equal(answerInline(sim, { kind: 'AUTHORIZATION', request: req }), undefined);
    assert.equal(answerInline(sim, { kind: 'AUTHORIZATION', request: withSaved('ref', req.card, 'MERCHANT') }), undefined);
    assert.ok(answerInline(sim, { kind: 'AUTHORIZATION', request: { ...req, save_token: false } }), 'a plain card still is');
  });

  it('keeps the card once authorized and pays with its reference; the number is not recorded', async () => {
    const req = save('4242424242424242');
    const saved = await sim.authorize(req);
    assert.equal(saved.outcome, 'SUCCESS');
    assert.equal(saved.token_saved, true);
    const rows = JSON.stringify((await db.db.query('SELECT data FROM sim_partner_operations WHERE key = $1', [req.key])).rows);
    assert.ok(!rows.includes('4242424242424242'), rows);
    for (const initiator of ['CUSTOMER', 'MERCHANT'] as const) {
      const r = await sim.authorize(withSaved(saved.partner_reference!, req.card, initiator));
      assert.equal(r.outcome, 'SUCCESS', initiator);
      assert.equal(r.card?.last_four_digits, '4242');
      assert.equal(r.card?.saved_card_id !== undefined, true, 'payd\'s saved card id is echoed with the card');
      assert.equal(r.card?.three_ds !== undefined, initiator === 'CUSTOMER', `3-D Secure only with the cardholder (${initiator})`);
      assert.equal(r.token_saved, undefined);
    }
  });

  it("follows the original number's behaviour: declines, 3-D Secure challenges (CIT only)", async () => {
    const challengeReq = save('4000000000003220');
    const challenge = await sim.authorize(challengeReq);
    assert.equal(challenge.outcome, 'PENDING');
    assert.equal(challenge.token_saved, false, 'not kept before the challenge');
    assert.equal((await sim.authorize(withSaved(challenge.partner_reference!, challengeReq.card, 'MERCHANT'))).status_code, 'INVALID_TOKEN', 'nothing kept yet');
    await sim.completeChallenge(challenge.partner_reference!, true);
    const cit = await sim.authorize(withSaved(challenge.partner_reference!, challengeReq.card, 'CUSTOMER'));
    assert.equal(cit.outcome, 'PENDING');
    assert.ok(cit.redirection, 'the cardholder is challenged again');
    const mit = await sim.authorize(withSaved(challenge.partner_reference!, challengeReq.card, 'MERCHANT'));
    assert.equal(mit.outcome, 'SUCCESS', 'no challenge without the cardholder');

    const cvcReq = save('4000000000000127'); // declined: incorrect CVV (at save time too)
    const cvc = await sim.authorize(cvcReq);
    assert.equal(cvc.outcome, 'REFUSED');
    assert.equal(cvc.token_saved, false);

    const captureFails = save('4000000000000341');
    const kept = await sim.authorize(captureFails);
    const paid = await sim.authorize(withSaved(kept.partner_reference!, captureFails.card, 'MERCHANT'));
    assert.equal(paid.outcome, 'SUCCESS');
    const capture = await sim.capture({ key: randomUUID(), entityId: ENTITY, authorization_reference: paid.partner_reference!, amount: 2000, currency: 'EUR' });
    assert.equal(capture.outcome, 'REFUSED', 'captures of the saved card are declined, as the number\'s were');
  });

  it('a forgotten card, or a reference it never kept, authorizes nothing', async () => {
    const req = save('5555555555554444');
    const saved = await sim.authorize(req);
    await sim.forgetCard({ entityId: ENTITY, reference: saved.partner_reference! });
    for (const reference of [saved.partner_reference!, randomUUID()]) {
      const r = await sim.authorize(withSaved(reference, req.card, 'MERCHANT'));
      assert.equal(r.outcome, 'REFUSED');
      assert.equal(r.status_code, 'INVALID_TOKEN');
    }
    const plain = await sim.authorize({ ...save('4242424242424242'), save_token: false });
    assert.equal((await sim.authorize(withSaved(plain.partner_reference!, undefined, 'MERCHANT'))).status_code, 'INVALID_TOKEN', 'an authorization without save_token kept no card');
  });
});
