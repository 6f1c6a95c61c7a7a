// Saved cards (issue 42 item 8; docs/decisions.md "Saved cards"): a card authorized with
// save_token becomes a saved card of the payment's customer; payments with it, customer-
// initiated (CVC) and merchant-initiated (no CVC, no 3-D Secure); list, get and delete;
// expired cards, another entity's card and idempotency keys.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';
import type { CardAcquirerSimulator } from '../../src/partners/simulators/card-acquirer.ts';

const year = new Date().getFullYear() + 1;
const card = (number = '4242424242424242', expiry_year = String(year)) => ({ type: 'CARD', number, expiry_month: '12', expiry_year, cvv: '123' });

describe('saved cards', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  const clock = new TestClock();
  before(async () => {
    t = await createTestApp({}, { clock: clock.now });
    m = await t.createMerchant('Cards on file');
    other = await t.createMerchant('Another shop');
  });
  after(() => t.close());

  let seq = 0;
  const post = (url: string, payload: unknown, key: string | undefined = `sc-${++seq}`, who = m) =>
    t.app.inject({ method: 'POST', url, headers: { ...who.auth, ...(key ? { 'x-idempotency-key': key } : {}) }, payload: payload as Record<string, unknown> });
  const get = (url: string, who = m) => t.app.inject({ method: 'GET', url, headers: who.auth });
  const del = (url: string, key?: string, who = m) => t.app.inject({ method: 'DELETE', url, headers: { ...who.auth, ...(key ? { 'x-idempotency-key': key } : {}) } });
  const ok = async (res: Awaited<ReturnType<typeof post>>) => {
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const cardSim = () => t.app.services.partners.get('card-sim') as CardAcquirerSimulator;
  /** What the card simulator recorded for the authorization of a payment. */
  const simAuth = async (paymentId: string) => (await t.testDb.db.query<{ status: string; data: Record<string, unknown> }>(
    `SELECT s.status, s.data FROM sim_partner_operations s JOIN partner_transactions t ON t.partner_key = s.key AND t.partner = s.partner
      WHERE t.payment_id = $1 AND t.kind = 'AUTHORIZATION'`, [paymentId])).rows[0];

  /** A payment that saves `number` for customer `reference`; returns the saved card's id. */
  const save = async (reference: string, number = '4242424242424242', extra: Record<string, unknown> = {}) => {
    const p = await ok(await post('/v2/payments', {
      amount: 1500, currency: 'EUR', allow_future_usage: true, customer: { reference, email: `${reference}@example.com` },
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1500, instrument: card(number) }], ...extra,
    }));
    const tx = p.authorization.partner_transactions[0];
    assert.equal(p.authorization.status, 'AUTHORIZED', JSON.stringify(p.authorization));
    assert.equal(tx.token_saved, true);
    assert.match(tx.saved_card_id, /^[0-9a-f-]{36}$/);
    return tx.saved_card_id as string;
  };
  const payWith = (saved_card_id: string, instrument: Record<string, unknown> = {}, extra: Record<string, unknown> = {}, key?: string, who = m) =>
    post('/v2/payments', {
      amount: 2500, currency: 'EUR', capture_mode: 'MANUAL',
      split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: { type: 'SAVED_CARD', saved_card_id, ...instrument } }], ...extra,
    }, key, who);

  it('a card authorized with save_token is a saved card of the customer; payd keeps no number and no CVC', async () => {
    const id = await save('cust-1');
    const res = await get(`/v2/saved-cards/${id}`);
    const c = await ok(res);
    assert.deepEqual({ ...c, created_at: undefined }, {
      id, entity_id: m.entityId, partner: 'card-sim', customer: { reference: 'cust-1', email: 'cust-1@example.com' },
      card: { bin: '424242', type: 'CREDIT', last_four_digits: '4242', expiry_month: '12', expiry_year: String(year), fingerprint: c.card.fingerprint, selected_network: 'VISA', country_code: 'GB' },
      created_at: undefined,
    });
    const row = JSON.stringify((await t.testDb.db.query('SELECT * FROM saved_cards WHERE id = $1', [id])).rows[0]);
    assert.ok(!row.includes('4242424242424242') && !/"123"/.test(row), row);
    // The simulator keeps the number's behaviour, not the number.
    const sim = JSON.stringify((await t.testDb.db.query('SELECT data FROM sim_partner_operations WHERE data->>\'save_token\' = \'true\'')).rows);
    assert.ok(!sim.includes('4242424242424242'), sim);
  });

  it('a declined card, or one saved without save_token, makes no saved card', async () => {
    const declined = await ok(await post('/v2/payments', {
      amount: 1000, currency: 'EUR', allow_future_usage: true, customer: { reference: 'cust-declined' },
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card('4000000000000002') }],
    }));
    assert.equal(declined.authorization.partner_transactions[0].token_saved, false);
    assert.equal(declined.authorization.partner_transactions[0].saved_card_id, undefined);
    await ok(await post('/v2/payments', {
      amount: 1000, currency: 'EUR', customer: { reference: 'cust-declined' },
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card() }],
    }));
    assert.deepEqual((await ok(await get('/v2/saved-cards?customer_reference=cust-declined'))).data, []);
  });

  it('a customer-initiated payment with the saved card and its CVC: 3-D Secure as the card requires, captured later', async () => {
    const id = await save('cust-cit');
    const p = await ok(await payWith(id, { cvv: '321' }, { customer: { reference: 'cust-cit' } }));
    assert.equal(p.authorization.status, 'AUTHORIZED');
    const tx = p.authorization.partner_transactions[0];
    assert.equal(tx.saved_card_id, id);
    assert.equal(tx.save_token, undefined);
    assert.equal(tx.card.last_four_digits, '4242');
    assert.equal(tx.card.three_ds.flow, 'FRICTIONLESS');
    const sim = await simAuth(p.id);
    assert.equal(sim!.data.initiator, 'CUSTOMER');
    const captured = await ok(await post(`/v2/payments/${p.id}/captures`, { amount: 2500 }));
    assert.equal(captured.amounts.total_captured, 2500);
    // A GET shows the same saved card id (stored, not only the answer built in memory).
    assert.equal((await ok(await get(`/v2/payments/${p.id}`))).authorization.partner_transactions[0].saved_card_id, id);
  });

  it('a saved challenge card asks the cardholder again (CIT) but not a merchant-initiated payment (MIT)', async () => {
    const saving = await ok(await post('/v2/payments', {
      amount: 1500, currency: 'EUR', allow_future_usage: true, customer: { reference: 'cust-3ds' },
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1500, instrument: card('4000000000003220') }],
    }));
    assert.equal(saving.authorization.status, 'PENDING');
    assert.equal(saving.authorization.partner_transactions[0].saved_card_id, undefined, 'not saved before the challenge');
    assert.ok(await cardSim().completeChallenge(saving.authorization.partner_transactions[0].partner_reference, true));
    const done = await ok(await get(`/v2/payments/${saving.id}`));
    const id = done.authorization.partner_transactions[0].saved_card_id;
    assert.equal(done.authorization.partner_transactions[0].token_saved, true);
    assert.ok(id, 'saved once the challenge passed');

    const cit = await ok(await payWith(id, { cvv: '123' }));
    assert.equal(cit.authorization.status, 'PENDING');
    assert.ok(cit.authorization.redirection, 'challenged again');

    const mit = await ok(await payWith(id));
    assert.equal(mit.authorization.status, 'AUTHORIZED');
    assert.equal(mit.authorization.partner_transactions[0].card.three_ds, undefined, 'no 3-D Secure without the cardholder');
    assert.equal((await simAuth(mit.id))!.data.initiator, 'MERCHANT');
  });

  it('a merchant-initiated payment: no CVC, sent as MERCHANT; a CVC with initiator MERCHANT is 400', async () => {
    const id = await save('cust-mit');
    const p = await ok(await payWith(id, { initiator: 'MERCHANT' }));
    assert.equal(p.authorization.status, 'AUTHORIZED');
    assert.equal(p.authorization.partner_transactions[0].saved_card_id, id);
    assert.equal((await simAuth(p.id))!.data.initiator, 'MERCHANT');
    const bad = expectProblem(await payWith(id, { initiator: 'MERCHANT', cvv: '123' }), 400);
    assert.equal(bad.invalid_params?.[0]?.name, 'split[0].instrument.cvv');
  });

  it("declines follow the original number's behaviour", async () => {
    const id = await save('cust-capture-fails', '4000000000000341'); // authorized; every capture declined
    const p = await ok(await payWith(id));
    assert.equal(p.authorization.status, 'AUTHORIZED');
    const c = await post(`/v2/payments/${p.id}/captures`, { amount: 2500 });
    assert.equal(c.json().captures[0].status, 'FAILURE', c.body);
  });

  it('lists, gets and deletes a customer\'s saved cards; a deleted card is 404 and cannot pay', async () => {
    const a = await save('cust-list');
    const b = await save('cust-list', '5555555555554444');
    await save('cust-list-other');
    const list = await ok(await get('/v2/saved-cards?customer_reference=cust-list'));
    assert.deepEqual(list.data.map((c: { id: string }) => c.id).sort(), [a, b].sort());
    const byEmail = await ok(await get('/v2/saved-cards?customer_email=CUST-LIST@example.com'));
    assert.equal(byEmail.data.length, 2);
    expectProblem(await get('/v2/saved-cards'), 400);
    expectProblem(await get('/v2/saved-cards?customer_reference=x&customer_email=y@example.com'), 400);

    const deleted = await ok(await del(`/v2/saved-cards/${a}`));
    assert.equal(deleted.id, a);
    assert.equal((await get(`/v2/saved-cards/${a}`)).statusCode, 404);
    assert.equal((await del(`/v2/saved-cards/${a}`)).statusCode, 404);
    assert.deepEqual((await ok(await get('/v2/saved-cards?customer_reference=cust-list'))).data.map((c: { id: string }) => c.id), [b]);
    const refused = await payWith(a);
    assert.equal(refused.statusCode, 404);
    assert.equal(refused.body, '');
    // The partner forgot it too.
    const original = (await t.testDb.db.query<{ partner_reference: string }>('SELECT partner_reference FROM saved_cards WHERE id = $1', [a])).rows[0]!;
    const sim = (await t.testDb.db.query<{ data: Record<string, unknown> }>('SELECT data FROM sim_partner_operations WHERE reference = $1', [original.partner_reference])).rows[0]!;
    assert.equal(sim.data.forgotten, true);
  });

  it('the same card saved again by the same customer is one saved card: same id, the new expiry, the new partner reference (merged by fingerprint)', async () => {
    const first = await save('cust-again');
    const later = String(year + 2);
    const p = await ok(await post('/v2/payments', {
      amount: 1500, currency: 'EUR', allow_future_usage: true, customer: { reference: 'cust-again', email: 'cust-again@example.com' },
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1500, instrument: card('4242424242424242', later) }],
    }));
    const tx = p.authorization.partner_transactions[0];
    assert.equal(tx.token_saved, true);
    assert.equal(tx.saved_card_id, first, 'the answer names the saved card it was merged into');
    const read = await ok(await get(`/v2/payments/${p.id}`));
    assert.equal(read.authorization.partner_transactions[0].saved_card_id, first, 'and so does the payment read again');
    const list = await ok(await get('/v2/saved-cards?customer_reference=cust-again'));
    assert.deepEqual(list.data.map((c: { id: string }) => c.id), [first]);
    assert.equal(list.data[0].card.expiry_year, later);
    const row = (await t.testDb.db.query<{ partner_reference: string }>('SELECT partner_reference FROM saved_cards WHERE id = $1', [first])).rows[0]!;
    assert.equal(row.partner_reference, tx.partner_reference, 'the partner\'s reference of the newest authorization names the card');
    assert.equal((await ok(await payWith(first))).authorization.status, 'AUTHORIZED');
    // Another customer of the entity, or the same card at another entity: a saved card of their own.
    const otherCustomer = await save('cust-again-2');
    assert.notEqual(otherCustomer, first);
    const elsewhere = await ok(await post('/v2/payments', {
      amount: 1500, currency: 'EUR', allow_future_usage: true, customer: { reference: 'cust-again', email: 'cust-again@example.com' },
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1500, instrument: card('4242424242424242', later) }],
    }, undefined, other));
    assert.notEqual(elsewhere.authorization.partner_transactions[0].saved_card_id, first);
    assert.equal((await get(`/v2/saved-cards/${first}`, other)).statusCode, 404);
  });

  it("another entity's saved card is a 404 everywhere", async () => {
    const id = await save('cust-private');
    assert.equal((await get(`/v2/saved-cards/${id}`, other)).statusCode, 404);
    assert.equal((await del(`/v2/saved-cards/${id}`, undefined, other)).statusCode, 404);
    assert.deepEqual((await ok(await get('/v2/saved-cards?customer_reference=cust-private', other))).data, []);
    const res = await payWith(id, {}, {}, undefined, other);
    assert.equal(res.statusCode, 404);
    assert.equal((await get(`/v2/saved-cards/${id}`)).statusCode, 200, 'still there for its own entity');
  });

  it('a saved card of another customer, another partner or with save_token is 400 naming the field', async () => {
    const id = await save('cust-owner');
    let p = expectProblem(await payWith(id, {}, { customer: { reference: 'someone-else' } }), 400);
    assert.equal(p.invalid_params?.[0]?.name, 'split[0].instrument.saved_card_id');
    p = expectProblem(await post('/v2/payments', {
      amount: 2500, currency: 'EUR',
      split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, save_token: true, instrument: { type: 'SAVED_CARD', saved_card_id: id } }],
    }), 400);
    assert.equal(p.invalid_params?.[0]?.name, 'split[0].save_token');
    p = expectProblem(await post('/v2/payments', {
      amount: 2500, currency: 'EUR',
      split: [{ partner: 'gift-sim', method: 'GIFT_CARD', amount: 2500, instrument: { type: 'SAVED_CARD', saved_card_id: id } }],
    }), 400);
    assert.equal(p.invalid_params?.[0]?.name, 'split[0].instrument');
  });

  it('idempotency keys: a payment with a saved card and a deletion replayed with their key are 409 with the resource', async () => {
    const id = await save('cust-keys');
    const first = await ok(await payWith(id, {}, {}, 'saved-pay-1'));
    const replay = expectProblem(await payWith(id, {}, {}, 'saved-pay-1'), 409);
    assert.equal(replay.resource_id, first.id);
    assert.equal(replay.same_request, true);

    const gone = await ok(await del(`/v2/saved-cards/${id}`, 'saved-del-1'));
    const again = expectProblem(await del(`/v2/saved-cards/${id}`, 'saved-del-1'), 409);
    assert.equal(again.resource_id, gone.id);
    assert.equal(again.same_request, true);
    // The same key on another card is another request (the path is in the fingerprint):
    // 409 same_request false, and that card is kept (an SDK would otherwise report it deleted).
    const otherCard = await save('cust-keys-2');
    const elsewhere = expectProblem(await del(`/v2/saved-cards/${otherCard}`, 'saved-del-1'), 409);
    assert.equal(elsewhere.same_request, false);
    assert.equal((await payWith(otherCard)).statusCode, 200, 'the other card is still usable');
    // A key not yet used on a card that is gone: 404, and the key is free again.
    assert.equal((await del(`/v2/saved-cards/${id}`, 'saved-del-2')).statusCode, 404);
  });

  it('an expired saved card is refused with 400 naming the field (the app clock past its month)', async () => {
    const id = await save('cust-expiry', '4242424242424242');
    assert.equal((await ok(await payWith(id))).authorization.status, 'AUTHORIZED');
    clock.advance(2 * 366 * 24 * 3600 * 1000); // past 12/<next year>
    const p = expectProblem(await payWith(id), 400);
    assert.equal(p.invalid_params?.[0]?.name, 'split[0].instrument.saved_card_id');
    assert.match(String(p.detail), /expired/);
  });
});
