// The payments a process wrote last (payments/recent-payments.ts): the capture that
// follows a creation at once skips the read, decided on the payment as this process
// wrote it; a payment changed elsewhere meanwhile (here, a second app on the same
// database, as a second payd process) is decided again on what is stored, so nothing is
// taken twice and nothing is refused that the stored payment allows.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { paymentsRepo } from '../../src/payments/payments.repo.ts';
import { moneyWriter } from '../../src/payments/money.repo.ts';
import { RecentPayments } from '../../src/payments/recent-payments.ts';
import { createTestApp, MASTER_KEY, type Merchant, type TestApp } from '../helpers/app.ts';

// (and no request log: its flush, once a second, would add statements too)
const NO_RATE_LIMITS = { rateLimitTokenPerKey: 0, rateLimitTokenPerAddress: 0, rateLimitApiPerKey: 0, requestLogPerSecond: 0 };

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
const body = (amount: number) => ({ amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });

/** Statements of the simulated partners (they play external systems): not payd's. */
const SIMULATOR = /sim_partner_operations|sim_follow_up/;

/** The database, counting payd's statements sent outside transactions. */
function counting(db: Db): { db: Db; count: () => number } {
  let n = 0;
  const proxy = new Proxy(db, {
    get(target, prop) {
      if (prop === 'query') {
        return (...args: Parameters<Db['query']>) => {
          if (!SIMULATOR.test(String(args[0]))) n += 1;
          return target.query(...args);
        };
      }
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { db: proxy, count: () => n };
}

/** What the process remembers of a payment is the database's row and ledger, field for field. */
async function assertRemembered(recent: RecentPayments, t: TestApp, entityId: string, id: string): Promise<void> {
  const remembered = recent.recall(entityId, id);
  assert.ok(remembered, 'remembered');
  const db = (await paymentsRepo.getWithLedger(t.testDb.db, entityId, id))!;
  assert.deepEqual({ ...remembered.payment }, db.payment);
  assert.deepEqual(remembered.txs.map((x) => ({ ...x })), db.txs);
  assert.deepEqual(remembered.ops.map((x) => ({ ...x })), db.ops);
}

// Both partner paths: answered inline, an operation is one conditional statement; with
// the partner called (PAYD_SIM_INLINE=false), two: the conditional reservation, then the
// settlement with the conclusion (the simulator's own statements are not counted here).
for (const inline of [true, false]) describe(`recently written payments, partners ${inline ? 'answering inline' : 'called'}`, () => {
  const W = inline ? 1 : 2; // statements of an operation decided on what the process remembers
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  let a: FastifyInstance; // remembers (counted)
  let b: FastifyInstance; // a second process on the same database
  let small: FastifyInstance; // remembers two payments
  let statements: () => number;
  const recent = new RecentPayments();

  before(async () => {
    // Rate limits off: their counters' sync (once a second) would add statements to the counts below.
    t = await createTestApp({ simInline: inline, ...NO_RATE_LIMITS });
    m = await t.createMerchant('Recent');
    other = await t.createMerchant('Other');
    const c = counting(t.testDb.db);
    statements = c.count;
    a = await buildApp({ config: t.config, db: c.db, masterKey: MASTER_KEY, logger: false, recent });
    b = await buildApp({ config: t.config, db: t.testDb.db, masterKey: MASTER_KEY, logger: false });
    small = await buildApp({ config: { ...t.config, recentPayments: 2 }, db: c.db, masterKey: MASTER_KEY, logger: false });
    await Promise.all([a.ready(), b.ready(), small.ready()]);
  });
  after(async () => {
    await Promise.all([a.close(), b.close(), small.close()]);
    await t.close();
  });

  const create = async (app: FastifyInstance, amount: number) => {
    const res = await app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: body(amount) });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().id as string;
  };
  const op = (app: FastifyInstance, id: string, kind: string, payload: object, who = m) =>
    app.inject({ method: 'POST', url: `/v2/payments/${id}/${kind}`, headers: who.auth, payload });
  const stored = async (id: string) => (await t.app.inject({ url: `/v2/payments/${id}`, headers: { ...m.auth, 'cache-control': 'max-age=0' } })).json();
  /** Statements `run` sends (the app's own background work is idle between requests). */
  const counted = async <T>(run: () => Promise<T>): Promise<{ result: T; n: number }> => {
    const before = statements();
    const result = await run();
    return { result, n: statements() - before };
  };

  it('a capture right after the creation skips the read, and answers what the database then holds', async () => {
    const id = await create(a, 1000);
    await assertRemembered(recent, t, m.entityId, id);
    const { result: res, n } = await counted(() => op(a, id, 'captures', { amount: 400 }));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(n, W, 'no read: the conditional write(s) only');
    assert.deepEqual(res.json(), await stored(id));
    await assertRemembered(recent, t, m.entityId, id);
    // The next operation too, from what the capture left.
    const { result: refund, n: n2 } = await counted(() => op(a, id, 'refunds', { amount: 100 }));
    assert.equal(refund.statusCode, 200, refund.body);
    assert.equal(n2, W);
    assert.deepEqual(refund.json(), await stored(id));
    await assertRemembered(recent, t, m.entityId, id);
  });

  it('a payment captured by another process meanwhile: the amount is decided on what is stored, never taken twice', async () => {
    const id = await create(a, 1000);
    assert.equal((await op(b, id, 'captures', { amount: 600 })).statusCode, 200);
    const refused = await op(a, id, 'captures', { amount: 500 });
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal(refused.json().available_amount, 400);
    const { result: rest, n } = await counted(() => op(a, id, 'captures', { amount: 400 }));
    assert.equal(rest.statusCode, 200, rest.body);
    assert.equal(n, 1 + W, 'the refusal forgot the stale payment: read, then write');
    const p = await stored(id);
    assert.equal(p.amounts.total_captured, 1000);
    assert.deepEqual(rest.json(), p);
  });

  it('a refusal on the remembered payment is decided again on the stored one (a capture elsewhere made a refund possible)', async () => {
    const id = await create(a, 1000);
    assert.equal((await op(b, id, 'captures', { amount: 1000 })).statusCode, 200);
    const res = await op(a, id, 'refunds', { amount: 300 });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await stored(id)).amounts.total_refunded, 300);
  });

  it('a conditional write that finds the payment moved on reads it afresh once', async () => {
    const id = await create(a, 1000);
    assert.equal((await op(b, id, 'voids', {})).statusCode, 200); // voided elsewhere: nothing left to capture
    const { result: res, n } = await counted(() => op(a, id, 'captures', { amount: 100 }));
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().type.endsWith('payment-not-authorized') || res.json().type.endsWith('amount-not-available'), true, res.body);
    assert.equal(n, 2, 'the conditional write applied nothing, then one fresh read, and the refusal');
  });

  it('a GET of a payment at rest is one statement, and shows what another process changed', async () => {
    const id = await create(a, 1000);
    assert.equal((await op(b, id, 'captures', { amount: 250 })).statusCode, 200);
    const { result: res, n } = await counted(() => a.inject({ url: `/v2/payments/${id}`, headers: m.auth }));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(n, 1, 'the payment with its ledger, in one statement');
    assert.equal(res.json().amounts.total_captured, 250);
    assert.deepEqual(res.json(), await stored(id));
    const { result: missing, n: n404 } = await counted(() => a.inject({ url: `/v2/payments/${id}`, headers: other.auth }));
    assert.equal(missing.statusCode, 404);
    assert.equal(n404, 1);
  });

  it("another merchant gets a 404 for a payment the process remembers", async () => {
    const id = await create(a, 1000);
    const res = await op(a, id, 'captures', { amount: 100 }, other);
    assert.equal(res.statusCode, 404, res.body);
    assert.equal((await stored(id)).amounts.total_captured, 0);
  });

  it('remembers a bounded number: the oldest is forgotten first', async () => {
    const first = await create(small, 1000);
    await create(small, 1000);
    const third = await create(small, 1000);
    assert.equal((await counted(() => op(small, first, 'captures', { amount: 1 }))).n, 1 + W, 'forgotten: read, then write');
    assert.equal((await counted(() => op(small, third, 'captures', { amount: 1 }))).n, W);
  });
});

// The one-statement end of an operation (operations.service.ts, conclude) builds its answer
// from the reading its reservation was decided on. A row of another operation PENDING in
// that reading can settle meanwhile without a new version (that operation's process
// records its partner's answer, then finalizes), so such a reading ends under the row
// lock instead, and the answer is what is stored.
describe('an operation decided on a reading with another operation in flight answers what is stored', () => {
  let t: TestApp;
  let m: Merchant;
  let app: FastifyInstance;
  const hook = { armed: false, run: undefined as undefined | (() => Promise<void>) };

  before(async () => {
    t = await createTestApp({ simInline: false, ...NO_RATE_LIMITS });
    m = await t.createMerchant('In flight');
    // The app's database: once armed, `run` goes just before the partner's first statement
    // (the simulator's record of the void), so within the void's partner call.
    const db = new Proxy(t.testDb.db, {
      get(target, prop) {
        const v = Reflect.get(target, prop) as unknown;
        if (typeof v !== 'function') return v;
        const fn = (v as (...a: unknown[]) => Promise<unknown>).bind(target);
        if (prop !== 'query') return fn;
        return async (...args: unknown[]) => {
          if (hook.armed && hook.run && SIMULATOR.test(String(args[0]))) {
            const run = hook.run;
            hook.run = undefined;
            await run();
          }
          return fn(...args);
        };
      },
    });
    app = await buildApp({ config: t.config, db, masterKey: MASTER_KEY, logger: false });
    await app.ready();
  });
  after(async () => {
    await app.close();
    await t.close();
  });

  it('a void while a capture awaits its partner, whose answer is recorded during the void', async () => {
    // Captures of this card time out: the capture stays PENDING until its answer comes.
    const slowCard = { ...card, number: '4000000000000416' };
    const created = await app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth,
      payload: { amount: 1000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: slowCard }] } });
    assert.equal(created.statusCode, 200, created.body);
    const id = created.json().id as string;
    const capture = await app.inject({ method: 'POST', url: `/v2/payments/${id}/captures`, headers: m.auth, payload: { amount: 600 } });
    assert.equal(capture.statusCode, 200, capture.body);
    assert.equal(capture.json().captures[0].status, 'PENDING', capture.body);
    const ledger = (await paymentsRepo.getWithLedger(t.testDb.db, m.entityId, id))!.txs;
    const pendingRow = ledger.find((x) => x.kind === 'CAPTURE')!;

    // The capture's answer is recorded while the void's partner call is in flight, as the
    // capture's process records a late answer (the ledger row; no new version).
    hook.run = async () => {
      assert.ok(await moneyWriter.record(t.testDb.db, { shape: 'answer', tx: pendingRow, parents: ledger, update: { status: 'SUCCESS', partner_status: 'SUCCEEDED' } }));
    };
    hook.armed = true;
    const voided = await app.inject({ method: 'POST', url: `/v2/payments/${id}/voids`, headers: m.auth, payload: {} });
    hook.armed = false;
    assert.equal(hook.run, undefined, 'the capture was recorded during the void');
    assert.equal(voided.statusCode, 200, voided.body);
    const stored = (await app.inject({ url: `/v2/payments/${id}`, headers: { ...m.auth, 'cache-control': 'max-age=0' } })).json();
    assert.equal(stored.captures[0].status, 'SUCCESS');
    assert.deepEqual(voided.json(), stored);
  });
});
