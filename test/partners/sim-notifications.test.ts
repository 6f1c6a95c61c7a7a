// The simulators notify like real partners (issue 19, inbound notifications): a signed
// POST /partners/card-sim/webhooks naming a call whose answer payd lost settles that
// PENDING transaction once, through the same route and code as Stripe's webhooks; the
// signing key is derived from payd's master key (app.ts), and a notification that does not
// verify is a 400 that changes nothing. The simulator's time (when it reveals a lost call's
// outcome, how old a signature may be) is the app's TestClock, moved instead of slept.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';
import type { SimulatedPartner } from '../../src/partners/simulators/simulated-partner.ts';

describe('card-sim notifications through POST /partners/card-sim/webhooks', () => {
  const clock = new TestClock();
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp({}, { clock: clock.now });
    m = await t.createMerchant();
  });
  after(async () => {
    await t?.close();
  });

  const send = (body: string, signature?: string) => t.app.inject({
    method: 'POST', url: '/partners/card-sim/webhooks', payload: body,
    headers: { 'content-type': 'application/json', ...(signature ? { 'sim-signature': signature } : {}) },
  });

  it('settles the authorization whose answer was lost, once; a forged, stale or unsigned one is 400', async () => {
    // 4000 0000 0000 0408: the simulator authorizes, the answer is lost (PENDING at payd).
    const created = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: m.auth,
      payload: { amount: 3100, currency: 'EUR', capture_mode: 'MANUAL', split: [{ partner: 'card-sim', method: 'CARD', amount: 3100, instrument: { type: 'CARD', number: '4000000000000408', expiry_month: '12', expiry_year: '2031', cvv: '123' } }] },
    });
    assert.equal(created.statusCode, 200, created.body);
    const id = created.json().id as string;
    assert.equal(created.json().authorization.status, 'PENDING');
    const stored = () => t.app.services.payments.getStored(m.entityId, id);
    const { rows } = await t.testDb.db.query<{ partner_key: string }>('SELECT partner_key FROM partner_transactions WHERE payment_id = $1', [id]);
    const body = JSON.stringify({ key: rows[0]!.partner_key });
    const sim = t.app.services.partners.get('card-sim') as SimulatedPartner;

    assert.equal((await send(body)).statusCode, 400, 'unsigned');
    assert.equal((await send(body, sim.signNotification(body).replace(/v1=[0-9a-f]+/, `v1=${'a'.repeat(64)}`))).statusCode, 400, 'forged');
    assert.equal((await send(body, sim.signNotification(body, new Date(clock.now() - 600_000)))).statusCode, 400, 'ten minutes old');
    assert.equal((await stored()).authorization.status, 'PENDING', 'nothing changed');

    // The simulator's outcome is revealed a second after the lost call: before then a valid
    // notification settles nothing; once its clock is past that, one does.
    const early = await send(body, sim.signNotification(body));
    assert.equal(early.statusCode, 200, early.body);
    assert.equal((await stored()).authorization.status, 'PENDING', 'not before its time');
    clock.advance(1_001);
    const first = await send(body, sim.signNotification(body));
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(first.json(), { received: true, applied: 1 });
    const settled = await stored();
    assert.equal(settled.authorization.status, 'AUTHORIZED');
    assert.equal(settled.amounts.available_to_capture, 3100);

    const again = await send(body, sim.signNotification(body));
    assert.equal(again.statusCode, 200);
    assert.deepEqual((await stored()).amounts, settled.amounts, 'a repeated notification changes nothing');
    const unknown = JSON.stringify({ key: 'never-sent' });
    assert.deepEqual((await send(unknown, sim.signNotification(unknown))).json(), { received: true, applied: 0 });
  });
});
