// An operation drawn on several authorizations asks their partners one after another; each
// answer is recorded as it comes (OperationsService.call), so that a process that dies
// while a later partner is being asked has lost none of the earlier answers.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { PartnerConnector } from '../../src/partners/port.ts';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';

const card = (amount: number) => ({
  partner: 'card-sim', method: 'CARD', amount, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' },
});

/** A gift card the simulator opens with 50 000 at its first use (initialGiftBalance). */
const gift = (amount: number) => ({ partner: 'gift-sim', method: 'GIFT_CARD', amount, instrument: { type: 'GIFT_CARD', number: '6036280000005555', pin: '1234' } });

describe('an operation on two authorizations', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    // Partners called (not answered inline), so that each capture is a call of its own.
    t = await createTestApp({ simInline: false });
    m = await t.createMerchant('Answers as they come');
  });
  after(() => t.close());

  it('records the first partner\'s answer before the second partner is asked', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: {
      amount: 1000, currency: 'EUR', capture_mode: 'MANUAL', split: [card(600), gift(400)],
    } });
    assert.equal(created.statusCode, 200, created.body);
    assert.equal(created.json().authorization.status, 'AUTHORIZED');
    const id = created.json().id as string;

    // The second capture call (whichever partner it goes to) waits until released; what is
    // stored meanwhile is read.
    const sims = ['card-sim', 'gift-sim'].map((name) => t.app.services.partners.get(name) as PartnerConnector);
    const captures = sims.map((sim) => sim.capture);
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    let secondAsked!: () => void;
    const asked = new Promise<void>((resolve) => { secondAsked = resolve; });
    sims.forEach((sim, i) => {
      sim.capture = async (req) => {
        if (++calls === 2) {
          secondAsked();
          await gate;
        }
        return captures[i]!.call(sim, req);
      };
    });
    try {
      const captured = t.app.inject({ method: 'POST', url: `/v2/payments/${id}/captures`, headers: m.auth, payload: { amount: 1000 } });
      await asked;
      const { rows } = await t.testDb.db.query<{ status: string }>(
        `SELECT status FROM partner_transactions WHERE payment_id = $1 AND kind = 'CAPTURE' ORDER BY seq`, [id]);
      assert.deepEqual(rows.map((r) => r.status), ['SUCCESS', 'PENDING'], 'the first answer is stored while the second partner is asked');
      release();
      const done = await captured;
      assert.equal(done.statusCode, 200, done.body);
      assert.equal(done.json().amounts.total_captured, 1000);
      assert.deepEqual(done.json().captures.map((c: { status: string }) => c.status), ['SUCCESS']);
    } finally {
      release();
      sims.forEach((sim, i) => { sim.capture = captures[i]!; });
    }
  });
});
