// The running totals on the payment row (migrations 0015, 0017 and 0031) equal the sums
// of its ledger after every kind of write, on both partner paths (inline and recorded):
// every statement that inserts ledger rows or operations adds their sums itself, and the
// update trigger counts every later change of status. Each statement that writes a
// ledger row is reached: splits, the reversal of a failed split, challenges, timeouts,
// declined operations, the locked path and operations racing on one payment.
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CardAcquirerSimulator } from '../../src/partners/simulators/card-acquirer.ts';
import { paymentsRepo, type PartnerTxRow } from '../../src/payments/payments.repo.ts';
import { moneyWriter } from '../../src/payments/money.repo.ts';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { storedTotalsDiffering } from '../helpers/invariants.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const cardPart = (amount: number, number?: string) => ({ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) });
const cardBody = (amount: number, number?: string) => ({ amount, currency: 'EUR', capture_mode: 'MANUAL', split: [cardPart(amount, number)] });
let giftSeq = 0;
/** A fresh gift card (balance 500.00) for `amount`. */
const giftPart = (amount: number) => ({ partner: 'gift-sim', method: 'GIFT_CARD', amount, instrument: { type: 'GIFT_CARD', number: `603628${String(++giftSeq).padStart(6, '0')}7777` } });
const splitBody = (...parts: Array<{ amount: number }>) => ({ amount: parts.reduce((a, p) => a + p.amount, 0), currency: 'EUR', capture_mode: 'MANUAL', split: parts });

for (const inline of [true, false]) {
  describe(`running totals equal the ledger (partners ${inline ? 'inline' : 'recorded'})`, () => {
    let t: TestApp;
    let m: Merchant;
    before(async () => {
      t = await createTestApp({ simInline: inline });
      m = await t.createMerchant('Totals');
    });
    after(() => t.close());

    const post = (url: string, payload: object) => t.app.inject({ method: 'POST', url, headers: m.auth, payload });

    it('after creations, captures, refunds, voids, refusals and refused operations', async () => {
      const a = (await post('/v2/payments', cardBody(5000))).json();
      assert.equal(a.authorization.status, 'AUTHORIZED');
      assert.equal((await post(`/v2/payments/${a.id}/captures`, { amount: 2000 })).statusCode, 200);
      assert.equal((await post(`/v2/payments/${a.id}/captures`, { amount: 1000 })).statusCode, 200);
      assert.equal((await post(`/v2/payments/${a.id}/refunds`, { amount: 500 })).statusCode, 200);
      assert.equal((await post(`/v2/payments/${a.id}/voids`, { amount: 2000 })).statusCode, 200);
      assert.equal((await post(`/v2/payments/${a.id}/captures`, { amount: 1 })).statusCode, 400, 'nothing left to capture');

      const full = (await post('/v2/payments', cardBody(3000))).json();
      assert.equal((await post(`/v2/payments/${full.id}/captures`, { amount: 3000 })).statusCode, 200);
      const refused = (await post('/v2/payments', cardBody(1000, '4000000000000002'))).json();
      assert.equal(refused.authorization.status, 'REFUSED');

      const p = (await t.app.inject({ url: `/v2/payments/${a.id}`, headers: m.auth })).json();
      assert.deepEqual({ c: p.amounts.total_captured, r: p.amounts.total_refunded, v: p.amounts.total_voided }, { c: 3000, r: 500, v: 2000 });
      assert.deepEqual(await storedTotalsDiffering(t.testDb.db), []);
    });

    it('after splits: a capture and a refund across two partners, and the reversal of a split whose card was declined', async () => {
      const s = (await post('/v2/payments', splitBody(giftPart(3000), cardPart(7000)))).json();
      assert.equal(s.authorization.status, 'AUTHORIZED');
      assert.equal((await post(`/v2/payments/${s.id}/captures`, { amount: 10000 })).statusCode, 200);
      assert.equal((await post(`/v2/payments/${s.id}/refunds`, { amount: 4000 })).statusCode, 200);
      const reversed = (await post('/v2/payments', splitBody(giftPart(2000), cardPart(5000, '4000000000000002')))).json();
      assert.equal(reversed.authorization.status, 'REFUSED');
      assert.equal(reversed.voids.length, 1, 'the gift card was released');
      assert.deepEqual(await storedTotalsDiffering(t.testDb.db), []);
    });

    it('while a challenge, an authorization or a capture is left PENDING, and once each settles', async () => {
      const challenged = (await post('/v2/payments', cardBody(4200, '4000000000003220'))).json();
      assert.equal(challenged.authorization.status, 'PENDING');
      const timedOut = (await post('/v2/payments', cardBody(6100, '4000000000000408'))).json();
      assert.equal(timedOut.authorization.status, 'PENDING');
      const slowCapture = (await post('/v2/payments', cardBody(2500, '4000000000000416'))).json();
      const pending = await post(`/v2/payments/${slowCapture.id}/captures`, { amount: 1000 });
      assert.equal(pending.json().captures[0].status, 'PENDING');
      // (A payment with an operation in flight: the next one is reserved under the row lock.)
      const voided = await post(`/v2/payments/${slowCapture.id}/voids`, { amount: 1000 });
      assert.equal(voided.statusCode, 200, voided.body);
      assert.equal(voided.json().voids[0].status, 'SUCCESS');
      const declined = (await post('/v2/payments', cardBody(1500, '4000000000000341'))).json();
      assert.equal((await post(`/v2/payments/${declined.id}/captures`, { amount: 1500 })).json().captures[0].status, 'FAILURE');
      assert.deepEqual(await storedTotalsDiffering(t.testDb.db), [], 'with rows PENDING');

      const sim = t.app.services.partners.get('card-sim') as CardAcquirerSimulator;
      assert.ok(await sim.completeChallenge(challenged.authorization.partner_transactions[0].partner_reference, true));
      assert.equal((await t.app.inject({ url: `/v2/payments/${challenged.id}`, headers: m.auth })).json().authorization.status, 'AUTHORIZED');
      assert.deepEqual(await storedTotalsDiffering(t.testDb.db), [], 'after the challenge');
    });

    it('when a one-statement conclusion finds the payment moved on: the settlement is counted all the same', async () => {
      const pendingTx = async (paymentId: string) => (await t.testDb.db.query<PartnerTxRow>(
        `SELECT id, kind, amount::int AS amount, parent_id FROM partner_transactions WHERE payment_id = $1 AND status = 'PENDING'`, [paymentId])).rows[0]!;
      const version = async (paymentId: string) => (await paymentsRepo.getById(t.testDb.db, paymentId))!.version;

      const timedOut = (await post('/v2/payments', cardBody(6200, '4000000000000408'))).json();
      const auth = await pendingTx(timedOut.id);
      assert.equal(await moneyWriter.conclude(t.testDb.db, { shape: 'creation', tx: auth, update: { status: 'AUTHORIZED' }, paymentId: timedOut.id,
        expectedVersion: (await version(timedOut.id)) - 1, status: 'AUTHORIZED', at: new Date(), event: undefined }), false, 'not concluded on a stale version');
      assert.equal((await paymentsRepo.txs(t.testDb.db, timedOut.id))[0]!.status, 'AUTHORIZED', 'settled all the same');

      const slow = (await post('/v2/payments', cardBody(2600, '4000000000000416'))).json();
      const captured = (await post(`/v2/payments/${slow.id}/captures`, { amount: 2600 })).json();
      const capture = await pendingTx(slow.id);
      const done = await moneyWriter.conclude(t.testDb.db, { shape: 'operation', tx: capture, parents: await paymentsRepo.txs(t.testDb.db, slow.id), update: { status: 'SUCCESS' }, paymentId: slow.id,
        expectedVersion: (await version(slow.id)) - 1, operationId: captured.captures[0].id, status: 'SUCCESS', at: new Date(), event: undefined });
      assert.deepEqual(done, { settled: true, concluded: false });
      assert.deepEqual(await storedTotalsDiffering(t.testDb.db), []);
    });

    it('for rows written the way a process of the previous version writes them, during a rolling upgrade (the triggers count them)', async () => {
      // (The statements of payd before migration 0031: rows inserted unmarked, settled by a plain UPDATE.)
      const q = (sql: string, params: unknown[]) => t.testDb.db.query(sql, params);
      const paymentId = randomUUID();
      const authId = randomUUID();
      await q(`WITH p AS (INSERT INTO payments (id, entity_id, amount, currency, capture_mode, split, authorization_status, processing)
                 VALUES ($1, $2, 4000, 'EUR', 'MANUAL', '[{"partner":"card-sim","method":"CARD","amount":4000}]', 'PENDING', true) RETURNING id)
               INSERT INTO partner_transactions (id, payment_id, kind, seq, partner, method, amount, status, partner_key)
               SELECT $3, p.id, 'AUTHORIZATION', 1, 'card-sim', 'CARD', 4000, 'PENDING', $4 FROM p`, [paymentId, m.entityId, authId, `${paymentId}:1`]);
      assert.deepEqual(await storedTotalsDiffering(t.testDb.db), [], 'an authorization written ahead');
      await q(`WITH t AS (UPDATE partner_transactions SET status = 'AUTHORIZED' WHERE id = $1 AND status = 'PENDING' RETURNING id)
               UPDATE payments SET authorization_status = 'AUTHORIZED', processing = false, version = version + 1 WHERE id = $2 AND EXISTS (SELECT 1 FROM t)`,
      [authId, paymentId]);
      const opId = randomUUID();
      const captureId = randomUUID();
      await q(`WITH o AS (INSERT INTO payment_operations (id, payment_id, kind, amount, status) VALUES ($1, $2, 'CAPTURE', 1500, 'PENDING') RETURNING id),
                 t AS (INSERT INTO partner_transactions (id, payment_id, operation_id, parent_id, kind, seq, partner, method, amount, status, partner_key)
                       SELECT $3, $2, o.id, $4, 'CAPTURE', 2, 'card-sim', 'CARD', 1500, 'PENDING', $5 FROM o)
               UPDATE payments SET version = version + 1 WHERE id = $2 AND EXISTS (SELECT 1 FROM o)`, [opId, paymentId, captureId, authId, `${opId}:1`]);
      assert.deepEqual(await storedTotalsDiffering(t.testDb.db), [], 'a reservation');
      await q(`UPDATE partner_transactions SET status = 'SUCCESS' WHERE id = $1 AND status = 'PENDING'`, [captureId]);
      await q(`UPDATE payment_operations SET status = 'SUCCESS' WHERE id = $1`, [opId]);
      assert.deepEqual(await storedTotalsDiffering(t.testDb.db), [], 'its settlement');
      const p = (await t.app.inject({ url: `/v2/payments/${paymentId}`, headers: m.auth })).json();
      assert.deepEqual({ authorized: p.amounts.total_authorized, captured: p.amounts.total_captured }, { authorized: 4000, captured: 1500 });
      assert.equal((await post(`/v2/payments/${paymentId}/captures`, { amount: 2501 })).statusCode, 400, 'only 2500 left to capture');
    });

    it('after captures racing on one payment (some end under the row lock) and an AUTOMATIC capture', async () => {
      const p = (await post('/v2/payments', cardBody(5000))).json();
      const codes = await Promise.all(Array.from({ length: 8 }, () => post(`/v2/payments/${p.id}/captures`, { amount: 1000 }).then((r) => r.statusCode)));
      assert.equal(codes.filter((c) => c === 200).length, 5, codes.join(' '));
      const auto = (await post('/v2/payments', { ...cardBody(900), capture_mode: 'AUTOMATIC' })).json();
      assert.equal(auto.captures[0].status, 'SUCCESS');
      assert.deepEqual(await storedTotalsDiffering(t.testDb.db), []);
    });
  });
}
