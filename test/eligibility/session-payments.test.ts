// Eligibility on the API (issue 43): a payment created with a client_session_id is judged
// by the entity's rules against the session's order and customer (those its offer was
// made for); a refused split part is a 400 naming the field and the rule that refuses it
// (its index in the rule set and what it says), and nothing is written.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { orderIn, pairs, setRules } from './helpers.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
const RULES = [
  { description: 'cards up to 5 000.00 EUR', partner: 'card-sim', method: 'CARD', amounts: { EUR: { max_amount: 500_000 } } },
  { description: 'BNPL for FR and BE', partner: 'bnpl-sim', billing_countries: { allow: ['FR', 'BE'] } },
];

describe('eligibility rules on payments with a client session', () => {
  let t: TestApp;
  let m: Merchant;

  const session = async (amount: number, extra: Record<string, unknown> = {}) => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount, currency: 'EUR', ...extra } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { id: string; status: string; eligible_solutions: Array<{ partner: string; method: string }> };
  };
  const pay = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload });
  const written = async () => ({
    payments: (await t.testDb.db.query('SELECT 1 FROM payments WHERE entity_id = $1', [m.entityId])).rows.length,
    events: (await t.testDb.db.query('SELECT 1 FROM webhook_events WHERE entity_id = $1', [m.entityId])).rows.length,
  });
  const sessionStatus = async (id: string) => (await t.app.inject({ url: `/v2/client-sessions/${id}`, headers: m.auth })).json().status;

  before(async () => {
    t = await createTestApp();
  });
  beforeEach(async () => {
    m = await t.createMerchant('session-rules');
    await setRules(t, m, RULES);
  });
  after(() => t.close());

  it('a BNPL part on a German session is refused naming split[i] and the rule; nothing is written', async () => {
    const s = await session(6_000, { order: orderIn('DE'), customer: { type: 'PERSON', email: 'ada@example.de' } });
    assert.deepEqual(pairs(s.eligible_solutions), ['card-sim/CARD', 'gift-sim/GIFT_CARD'], 'the offer leaves BNPL out');
    const before = await written();

    const bnpl = await pay({ amount: 6_000, currency: 'EUR', client_session_id: s.id, split: [{ partner: 'bnpl-sim', method: 'INSTALLMENTS_3X', amount: 6_000 }] });
    const problem = expectProblem(bnpl, 400);
    assert.equal(problem.invalid_params?.length, 1);
    assert.equal(problem.invalid_params![0]!.name, 'split[0]');
    const reason = problem.invalid_params![0]!.reason;
    assert.match(reason, /^bnpl-sim\/INSTALLMENTS_3X is not an eligible solution for this order: /);
    assert.match(reason, /rules\[1\] refuses it \(bnpl-sim allowed only for billing countries FR, BE \(this order: DE\)\)/);
    assert.equal(problem.detail, `split[0]: ${reason}`);

    // The body cannot argue with its session: a French order in the body of a German session's payment is refused too.
    const claimed = await pay({
      amount: 6_000, currency: 'EUR', client_session_id: s.id, order: orderIn('FR'),
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1_000, instrument: card }, { partner: 'bnpl-sim', method: 'INSTALLMENTS_4X', amount: 5_000 }],
    });
    const claimedProblem = expectProblem(claimed, 400);
    assert.equal(claimedProblem.invalid_params![0]!.name, 'split[1]');
    assert.match(claimedProblem.invalid_params![0]!.reason, /rules\[1\] refuses it \(bnpl-sim allowed only for billing countries FR, BE \(this order: DE\)\)/);

    assert.deepEqual(await written(), before, 'no payment row, no event');
    assert.equal(await sessionStatus(s.id), 'CREATED', 'the session is as it was');

    // A card, which the rules allow for this order, pays the same session.
    const ok = await pay({ amount: 6_000, currency: 'EUR', client_session_id: s.id, split: [{ partner: 'card-sim', method: 'CARD', amount: 6_000, instrument: card }] });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().authorization.status, 'AUTHORIZED', ok.body);
    assert.equal(ok.json().client_session_id, s.id);
  });

  it('a French session pays with BNPL without repeating its order in the payment', async () => {
    const s = await session(6_000, { order: orderIn('FR') });
    assert.ok(pairs(s.eligible_solutions).includes('bnpl-sim/INSTALLMENTS_3X'));
    const ok = await pay({ amount: 6_000, currency: 'EUR', client_session_id: s.id, split: [{ partner: 'bnpl-sim', method: 'INSTALLMENTS_3X', amount: 6_000 }] });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  it('an amount rule: a card payment above the rule\'s maximum is refused naming the rule', async () => {
    const s = await session(600_000, { order: orderIn('FR') });
    assert.deepEqual(pairs(s.eligible_solutions), [], 'nothing is offered for 6 000.00 EUR (BNPL stops at 3 000.00, gift cards at 500.00)');
    const before = await written();
    const big = await pay({ amount: 600_000, currency: 'EUR', client_session_id: s.id, split: [{ partner: 'card-sim', method: 'CARD', amount: 600_000, instrument: card }] });
    const problem = expectProblem(big, 400);
    assert.equal(problem.invalid_params![0]!.name, 'split[0]');
    assert.match(problem.invalid_params![0]!.reason,
      /^card-sim\/CARD is not an eligible solution for this order: the entity's eligibility rule rules\[0\] refuses it \(card-sim\/CARD allowed only up to 500000 EUR minor units \(this payment: 600000\)\)/);
    assert.deepEqual(await written(), before, 'no payment row, no event');
    assert.equal(await sessionStatus(s.id), 'CREATED');

    // At the rule's bound (inclusive): paid.
    const at = await session(500_000);
    const ok = await pay({ amount: 500_000, currency: 'EUR', client_session_id: at.id, split: [{ partner: 'card-sim', method: 'CARD', amount: 500_000, instrument: card }] });
    assert.equal(ok.statusCode, 200, ok.body);
  });
});
