// Money state has one writer (issue 44, item 1): every statement that writes a payment's
// status, version or running totals, its ledger rows or its operations is in
// src/payments/money.repo.ts, behind its three steps (reserve, record, conclude), and
// every path that changes a payment, the request's own and settlement's (a read that
// syncs, recovery, a late answer, a reversal), goes through them.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { moneyWriter } from '../../src/payments/money.repo.ts';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';

const SRC = path.resolve(import.meta.dirname, '../../src');
/** A statement that writes one of the money tables. */
const WRITES_MONEY = /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(payments|partner_transactions|payment_operations)\b/gi;
/** The one write of those tables outside the writer: the stored view of a payment at rest (a cache of the answer, no money state). */
const STORED_VIEW = /UPDATE payments SET view = \$3, view_version = \$2, view_format = \$4\s/;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('money state has one writer', () => {
  it('no file but src/payments/money.repo.ts writes payments, partner_transactions or payment_operations', () => {
    const writers: string[] = [];
    for (const file of sources(SRC)) {
      if (file.endsWith(path.join('payments', 'money.repo.ts'))) continue;
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(WRITES_MONEY)) {
        if (STORED_VIEW.test(text.slice(m.index, m.index + 80))) continue;
        writers.push(`${path.relative(SRC, file)}: ${m[0]}`);
      }
    }
    assert.deepEqual(writers, []);
  });

  it('the writer has three steps, and nothing else of it writes', () => {
    assert.deepEqual(Object.keys(moneyWriter), ['reserve', 'record', 'conclude']);
  });
});

for (const simInline of [true, false]) describe(`every change of a payment goes through reserve, record and conclude (partners ${simInline ? 'inline' : 'called'})`, () => {
  const clock = new TestClock();
  let t: TestApp;
  let m: Merchant;
  let calls: string[] = [];
  const original = { ...moneyWriter };

  before(async () => {
    t = await createTestApp({ simInline }, { clock: clock.now });
    m = await t.createMerchant('one writer');
    // Every call of a step, with its shape.
    moneyWriter.reserve = (async (q, r) => { calls.push(`reserve ${r.shape}`); return original.reserve(q, r); }) as typeof moneyWriter.reserve;
    moneyWriter.record = async (q, r) => { calls.push(`record ${r.shape}`); return original.record(q, r); };
    moneyWriter.conclude = (async (q, c) => { calls.push(`conclude ${c.shape}`); return original.conclude(q, c); }) as typeof moneyWriter.conclude;
  });
  after(async () => {
    Object.assign(moneyWriter, original);
    await t.close();
  });

  const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
  const pay = async (amount: number, number: string, split2?: { partner: string; method: string; number: string; amount: number }) => {
    const split = [{ partner: 'card-sim', method: 'CARD', amount: amount - (split2?.amount ?? 0), instrument: card(number) }];
    if (split2) split.unshift({ partner: split2.partner, method: split2.method, amount: split2.amount, instrument: { type: 'GIFT_CARD', number: split2.number } as never });
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: { amount, currency: 'EUR', split } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const get = async (id: string) => (await t.app.inject({ url: `/v2/payments/${id}`, headers: m.auth })).json();
  const capture = async (id: string, amount: number) => {
    const res = await t.app.inject({ method: 'POST', url: `/v2/payments/${id}/captures`, headers: m.auth, payload: { amount } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  /** The steps a piece of work called. */
  const steps = async (work: () => Promise<unknown>): Promise<string[]> => {
    calls = [];
    await work();
    return calls;
  };

  it('a card payment and its capture', async () => {
    let id = '';
    const created = await steps(async () => { id = (await pay(1000, '4242424242424242')).id; });
    assert.deepEqual(created, simInline ? ['reserve payment, concluded'] : ['reserve payment', 'conclude creation']);
    const captured = await steps(() => capture(id, 1000));
    assert.deepEqual(captured, simInline ? ['reserve operation, concluded'] : ['reserve operation', 'conclude operation']);
  });

  it('an authorization whose answer was lost, settled by a later read', async () => {
    let id = '';
    const created = await steps(async () => { id = (await pay(6100, '4000000000000408')).id; });
    assert.deepEqual(created, ['reserve payment', 'conclude locked']); // (the answer lost: PENDING, concluded as such under the lock)
    clock.advance(1001); // the simulator reveals the outcome once its time has come
    const settled = await steps(async () => assert.equal((await get(id)).authorization.status, 'AUTHORIZED'));
    assert.deepEqual(settled, ['record answer', 'conclude locked']);
  });

  it('a capture whose answer was lost, settled by a later read', async () => {
    const id = (await pay(2600, '4000000000000416')).id;
    const captured = await steps(() => capture(id, 2600));
    assert.equal(captured[0], 'reserve operation');
    assert.ok(!captured.some((c) => c.startsWith('record')), 'no answer to record');
    clock.advance(1001);
    const settled = await steps(async () => assert.equal((await get(id)).captures[0].status, 'SUCCESS'));
    assert.deepEqual(settled, ['record answer', 'conclude locked']);
  });

  it('a split whose card part is refused: the gift card part reversed', async () => {
    let p: { id: string; authorization: { status: string }; voids: Array<{ status: string; triggered_by: string }> } | undefined;
    const work = await steps(async () => {
      p = await pay(3000, '4000000000000002', { partner: 'gift-sim', method: 'GIFT_CARD', number: '6000000000555555', amount: 1000 });
    });
    const final = await get(p!.id);
    assert.equal(final.authorization.status, 'REFUSED');
    assert.equal(final.voids[0].triggered_by, 'SYSTEM');
    assert.equal(final.voids[0].status, 'SUCCESS');
    // Created (its parts reserved and answered), concluded under the lock with the reversal reserved, the void answered and concluded.
    assert.deepEqual(work.filter((c) => c.startsWith('conclude')), ['conclude locked', 'conclude locked']);
    assert.ok(work.includes('reserve operation'), 'the reversal reserved');
    assert.ok(work.filter((c) => c === 'record answer').length >= 2, 'the answers recorded');
  });
});
