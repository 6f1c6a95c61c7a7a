// The money-invariants check of the fault suite catches what it is there to catch: a
// clean payment passes; an over-capture, a partner movement payd does not know, a
// disagreement on a key, and a PENDING row are each reported; a late approval passes only
// once voided at the partner.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { moneyInvariants } from '../helpers/invariants.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' };

describe('fault suite: the money-invariants check', () => {
  let t: TestApp;
  let m: Merchant;
  let paymentId: string;
  before(async () => {
    t = await createTestApp({ simInline: false });
    m = await t.createMerchant();
    const p = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth,
      payload: { amount: 5000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 5000, instrument: card }] } });
    assert.equal(p.statusCode, 200, p.body);
    paymentId = p.json().id;
    const c = await t.app.inject({ method: 'POST', url: `/v2/payments/${paymentId}/captures`, headers: m.auth, payload: { amount: 3000 } });
    assert.equal(c.statusCode, 200, c.body);
  });
  after(() => t.close());

  /** Runs the check inside a transaction that makes the change and is then rolled back. */
  const tamper = async (sql: string, fn: (v: string[], pending: number) => void) => {
    const undo = new Error('rollback');
    await t.testDb.db.transaction(async (tx) => {
      await tx.exec(sql);
      const r = await moneyInvariants(tx);
      fn(r.violations, r.pending);
      throw undo;
    }).catch((err: unknown) => {
      if (err !== undo) throw err;
    });
  };

  it('passes a clean payment and reports its ledger', async () => {
    const r = await moneyInvariants(t.testDb.db);
    assert.deepEqual(r.violations, []);
    assert.equal(r.pending, 0);
    assert.deepEqual(r.ledger.get(paymentId), { authorized: 5000, captured: 3000, voided: 0, refunded: 0, pending: 0 });
  });

  it('reports an over-capture, an unknown partner movement, a disagreement and a PENDING row', async () => {
    await tamper(`UPDATE partner_transactions SET amount = 9000 WHERE kind = 'CAPTURE'`, (v) => {
      assert.ok(v.some((x) => /captured 9000 \+ voided 0 > authorized 5000/.test(x)), v.join('\n'));
    });
    await tamper(`INSERT INTO sim_partner_operations (partner, key, kind, reference, amount, status)
                  VALUES ('card-sim', 'nobody-knows', 'CAPTURE', 'ref-x', 100, 'SUCCEEDED')`, (v) => {
      assert.ok(v.some((x) => /key nobody-knows: the partner moved 100 that payd has no record of/.test(x)), v.join('\n'));
    });
    await tamper(`UPDATE partner_transactions SET status = 'FAILURE' WHERE kind = 'CAPTURE'`, (v) => {
      assert.ok(v.some((x) => /is SUCCEEDED at the partner but FAILURE in payd/.test(x)), v.join('\n'));
    });
    await tamper(`UPDATE payment_operations SET status = 'PENDING'`, (_v, pending) => assert.equal(pending, 1));
  });

  it('takes a late approval (ANSWERED_LATE) as settled only once the partner voided it', async () => {
    const late = `UPDATE partner_transactions SET status = 'ERROR', status_code = 'ANSWERED_LATE' WHERE kind = 'AUTHORIZATION';`;
    const notReversed = /was approved late and is not reversed at the partner/;
    await tamper(late, (v) => assert.ok(v.some((x) => notReversed.test(x)), v.join('\n')));
    await tamper(`${late} INSERT INTO sim_partner_operations (partner, key, kind, reference, parent_ref, amount, status)
                  SELECT 'card-sim', 'late-void', 'VOID', 'ref-v', reference, amount, 'SUCCEEDED' FROM sim_partner_operations
                   WHERE partner = 'card-sim' AND kind = 'AUTHORIZATION'`, (v) => {
      assert.ok(!v.some((x) => notReversed.test(x)), v.join('\n'));
      assert.ok(!v.some((x) => /is AUTHORIZED at the partner but ERROR in payd/.test(x)), v.join('\n'));
    });
  });
});
