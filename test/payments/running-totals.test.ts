// The running totals on the payment row (migrations 0015 and 0017) equal the sums of its
// ledger after every kind of write, on both partner paths: inline (the statement that
// inserts settled rows writes their sums) and recorded (the triggers count rows inserted
// PENDING and every later change of status).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const cardBody = (amount: number, number?: string) => ({ amount, currency: 'EUR', capture_mode: 'MANUAL', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) }] });

/** Payments whose stored sums differ from their ledger's, as "id column stored≠ledger". */
async function sumsDiffering(t: TestApp): Promise<string[]> {
  const { rows } = await t.testDb.db.query<Record<string, string | number>>(
    `SELECT p.id,
       p.operation_count, (SELECT count(*) FROM payment_operations o WHERE o.payment_id = p.id)::int AS l_operation_count,
       p.authorize_pending, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'AUTHORIZATION' AND t.status = 'PENDING'), 0) AS l_authorize_pending,
       p.total_authorized, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'AUTHORIZATION' AND t.status = 'AUTHORIZED'), 0) AS l_total_authorized,
       p.total_captured, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'CAPTURE' AND t.status = 'SUCCESS'), 0) AS l_total_captured,
       p.total_voided, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'VOID' AND t.status = 'SUCCESS'), 0) AS l_total_voided,
       p.total_refunded, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'REFUND' AND t.status = 'SUCCESS'), 0) AS l_total_refunded,
       p.reserved_capture, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'CAPTURE' AND t.status = 'PENDING'), 0) AS l_reserved_capture,
       p.reserved_void, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'VOID' AND t.status = 'PENDING'), 0) AS l_reserved_void,
       p.reserved_refund, coalesce(sum(t.amount) FILTER (WHERE t.kind = 'REFUND' AND t.status = 'PENDING'), 0) AS l_reserved_refund
     FROM payments p LEFT JOIN partner_transactions t ON t.payment_id = p.id GROUP BY p.id`);
  const out: string[] = [];
  for (const r of rows) {
    for (const k of Object.keys(r).filter((c) => c.startsWith('l_'))) {
      const col = k.slice(2);
      if (Number(r[col]) !== Number(r[k])) out.push(`${r.id} ${col} ${r[col]}≠${r[k]}`);
    }
  }
  return out;
}

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
      assert.deepEqual(await sumsDiffering(t), []);
    });
  });
}
