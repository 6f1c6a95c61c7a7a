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
import { storedTotalsDiffering } from '../helpers/invariants.ts';
import { waitFor } from '../helpers/wait.ts';
import type { SimulatedPartner } from '../../src/partners/simulators/simulated-partner.ts';

const SRC = path.resolve(import.meta.dirname, '../../src');
/** A statement that writes one of the money tables. */
const WRITES_MONEY = /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(payments|partner_transactions|payment_operations)\b/gi;
/** The one write of those tables outside the writer: the stored view of a payment at rest (a cache of the answer, no money state). */
const STORED_VIEW = /UPDATE payments SET view = v.view, view_version = v.version, view_format = \$4\s/;

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

// The statements count their own sums (issue 44): with the database's totals triggers
// (migrations 0031, 0032, 0043: kept only for the rows a process of an earlier version
// writes) disabled, every normal path still leaves each payment's stored totals equal to
// the running-totals rule over its ledger (test/helpers/invariants.ts). A path that left
// its sums to a trigger would leave them behind here.
const TOTALS_TRIGGERS = [['partner_transactions', 'partner_transactions_totals_ins'], ['partner_transactions', 'partner_transactions_totals_upd'],
  ['payment_operations', 'payment_operations_count']] as const;
const setTotalsTriggers = async (t: TestApp, on: boolean) => {
  for (const [table, trigger] of TOTALS_TRIGGERS) await t.testDb.db.query(`ALTER TABLE ${table} ${on ? 'ENABLE' : 'DISABLE'} TRIGGER ${trigger}`);
};

for (const simInline of [true, false]) describe(`no trigger writes the totals of the normal paths (partners ${simInline ? 'inline' : 'called'})`, () => {
  const clock = new TestClock();
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp({ simInline }, { clock: clock.now });
    m = await t.createMerchant('no trigger');
    await setTotalsTriggers(t, false);
  });
  after(() => t?.close());

  const card = (number: string, amount: number) => ({ partner: 'card-sim', method: 'CARD', amount,
    instrument: { type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' } });
  const inject = (method: 'GET' | 'POST', url: string, payload?: object) => t.app.inject({ method, url, headers: m.auth, ...(payload ? { payload } : {}) });
  const pay = async (amount: number, split: object[], capture_mode = 'MANUAL') => {
    const res = await inject('POST', '/v2/payments', { amount, currency: 'EUR', capture_mode, split });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { id: string; authorization: { status: string } };
  };
  const operate = async (id: string, op: 'captures' | 'refunds' | 'voids', amount: number) => {
    const res = await inject('POST', `/v2/payments/${id}/${op}`, { amount });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const get = async (id: string) => (await inject('GET', `/v2/payments/${id}`)).json();
  /** Sends the simulator's signed notification for a ledger row of payment `id` (its outcome read from the simulator). */
  const notify = async (id: string, kind: string) => {
    const { rows } = await t.testDb.db.query<{ partner_key: string }>('SELECT partner_key FROM partner_transactions WHERE payment_id = $1 AND kind = $2', [id, kind]);
    const body = JSON.stringify({ key: rows[0]!.partner_key });
    const sim = t.app.services.partners.get('card-sim') as SimulatedPartner;
    const r = await t.app.inject({ method: 'POST', url: '/partners/card-sim/webhooks', payload: body,
      headers: { 'content-type': 'application/json', 'sim-signature': sim.signNotification(body) } });
    assert.equal(r.statusCode, 200, r.body);
  };
  /** The stored totals of the payments `ids` differ from their ledgers' in nothing (storedTotalsDiffering: one line per difference, by payment id). */
  const agree = async (what: string, ...ids: string[]) => assert.deepEqual(
    (await storedTotalsDiffering(t.testDb.db)).filter((d) => ids.some((id) => d.startsWith(`${id} `))), [], `${what}: the stored totals are the ledger's`);

  it('creation, capture, refund and void', async () => {
    const p = await pay(5000, [card('4242424242424242', 5000)]);
    assert.equal(p.authorization.status, 'AUTHORIZED');
    await agree('created', p.id);
    await operate(p.id, 'captures', 3000);
    await agree('captured', p.id);
    await operate(p.id, 'refunds', 1000);
    await agree('refunded', p.id);
    await operate(p.id, 'voids', 2000);
    await agree('voided', p.id);
    const declined = await pay(1200, [card('4000000000000341', 1200)]);
    await operate(declined.id, 'captures', 1200); // declined by the partner
    await agree('a declined capture', declined.id);
    const refused = await pay(900, [card('4000000000000002', 900)]);
    assert.equal(refused.authorization.status, 'REFUSED');
    await agree('refused', refused.id);
  });

  it('a split: its parts recorded one by one, and the reversal of the gift card part when the card is refused', async () => {
    const gift = { partner: 'gift-sim', method: 'GIFT_CARD', amount: 1000, instrument: { type: 'GIFT_CARD', number: '6000000000555555' } };
    const split = await pay(3000, [gift, card('4242424242424242', 2000)], 'AUTOMATIC');
    assert.equal(split.authorization.status, 'AUTHORIZED');
    await agree('a split authorized and captured', split.id);
    const refused = await pay(3000, [gift, card('4000000000000002', 2000)]);
    const final = await get(refused.id);
    assert.equal(final.voids[0].status, 'SUCCESS', 'the gift card part reversed');
    await agree('a split reversed', refused.id);
  });

  it('settlement by sync: an authorization and a capture whose answers were lost, settled by a later read', async () => {
    const p = await pay(6100, [card('4000000000000408', 6100)]);
    assert.equal(p.authorization.status, 'PENDING');
    await agree('an authorization in flight', p.id);
    clock.advance(1001);
    assert.equal((await get(p.id)).authorization.status, 'AUTHORIZED');
    await agree('an authorization settled by a read', p.id);
    const c = await pay(2600, [card('4000000000000416', 2600)]);
    await operate(c.id, 'captures', 2600);
    await agree('a capture in flight', c.id);
    clock.advance(1001);
    assert.equal((await get(c.id)).captures[0].status, 'SUCCESS');
    await agree('a capture settled by a read', c.id);
  });

  it('late answers: a partner\'s notification of an authorization and of a capture still PENDING', async () => {
    const p = await pay(4100, [card('4000000000000408', 4100)]);
    clock.advance(1001);
    await notify(p.id, 'AUTHORIZATION');
    await agree('an authorization answered late', p.id);
    const c = await pay(4200, [card('4000000000000416', 4200)]);
    await operate(c.id, 'captures', 1500);
    clock.advance(1001);
    await notify(c.id, 'CAPTURE');
    await agree('a capture answered late', c.id);
    const { rows } = await t.testDb.db.query<{ status: string }>(`SELECT status FROM partner_transactions WHERE payment_id = ANY($1) AND status = 'PENDING'`, [[p.id, c.id]]);
    assert.deepEqual(rows, [], 'the notifications settled both');
  });

  it('a late answer of an authorization payd had closed: recorded, then reversed', async () => {
    const p = await pay(3100, [card('4000000000000408', 3100)]);
    // Closed as recovery closes it (test/payments/totals-rule.test.ts): this test's own SQL,
    // counted by the triggers as any row of another writer is.
    await setTotalsTriggers(t, true);
    await t.testDb.db.query(`UPDATE partner_transactions SET status = 'ERROR', status_code = 'NOT_RECEIVED', partner_status = 'NOT_RECEIVED'
      WHERE payment_id = $1 AND kind = 'AUTHORIZATION'`, [p.id]);
    await setTotalsTriggers(t, false);
    clock.advance(1001);
    await notify(p.id, 'AUTHORIZATION');
    const final = await get(p.id);
    assert.equal(final.voids[0]?.status, 'SUCCESS', 'reversed at the partner');
    await agree('a late approval reversed', p.id);
  });
});

describe('no trigger writes the totals of an answer that came after its deadline', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    // Every call of the simulator takes longer than payd waits: the answers come late, to callPartner's late callback.
    t = await createTestApp({ simInline: false, simLatencyMs: 400, partnerTimeoutMs: 100 });
    m = await t.createMerchant('late');
    await setTotalsTriggers(t, false);
  });
  after(() => t?.close());

  it('an authorization answered after payd stopped waiting', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: { amount: 700, currency: 'EUR', capture_mode: 'MANUAL',
      split: [{ partner: 'card-sim', method: 'CARD', amount: 700, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' } }] } });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().authorization.status, 'PENDING');
    await waitFor(async () => (await t.testDb.db.query(`SELECT 1 FROM partner_transactions WHERE payment_id = $1 AND status = 'AUTHORIZED'`, [res.json().id])).rows.length === 1,
      { what: 'the late answer to be recorded' });
    await waitFor(async () => (await t.testDb.db.query('SELECT 1 FROM payments WHERE id = $1 AND authorization_status = $2', [res.json().id, 'AUTHORIZED'])).rows.length === 1,
      { what: 'the payment to be concluded' });
    assert.deepEqual(await storedTotalsDiffering(t.testDb.db), []);
  });
});
