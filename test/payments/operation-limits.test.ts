// Many operations on one payment (payd issue 12, item 7): 3,000 one-cent captures once
// made 686 MB of webhook events, each event carrying every earlier operation, and each
// capture slower than the last. Now:
// - an operation's event carries the payment's summary and that operation only, so its
//   size does not grow with the operations before it;
// - what an operation reads and writes besides the answer's ledger read (the answer is a
//   Payment with every operation, as the spec says) does not grow either: it decides from
//   running totals on the payment row, not from every earlier ledger row;
// - a payment takes at most PAYD_MAX_OPERATIONS_PER_PAYMENT operations; the next one is a
//   400 problem, and nothing is written or sent to a partner.
// Captures made: PAYD_MANY_OPERATIONS (default 200) with partners answering inline, a
// quarter of that (at least 20) with partners called (the locked path). Inline, twice: on
// a payment this process remembers as it wrote it (payments/recent-payments.ts: no read
// at all, the answer is built from memory), and remembering nothing (PAYD_RECENT_PAYMENTS
// 0: every capture reads the payment, as one on a payment another process wrote).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Db, Queryable } from '../../src/platform/db/index.ts';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { storedTotalsDiffering } from '../helpers/invariants.ts';

const MANY = Math.max(20, Number(process.env.PAYD_MANY_OPERATIONS ?? 200)); // (at least 20: capture #10 is compared with capture #N)
const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
const body = (amount: number) => ({ amount, currency: 'EUR', order: { reference: 'many-ops' }, split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card }] });

/** What the app's statements read and write, per statement (the app and the test share the Db object). */
interface Stat { sql: string; read: number; written: number }
function spy(db: Db): { stats: Stat[]; on: boolean } {
  const state = { stats: [] as Stat[], on: false };
  const size = (v: unknown) => (v === null || v === undefined ? 0 : typeof v === 'string' ? v.length : v instanceof Date ? 8 : JSON.stringify(v).length);
  const wrap = <Q extends Queryable>(q: Q): Q => {
    const query = q.query.bind(q);
    q.query = (async (sql: string, params?: readonly unknown[]) => {
      const res = await query(sql, params);
      if (state.on) state.stats.push({ sql, read: JSON.stringify(res.rows).length, written: (params ?? []).reduce((s: number, p) => s + size(p), 0) });
      return res;
    }) as Q['query'];
    return q;
  };
  wrap(db);
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: (tx: Queryable) => Promise<unknown>) => transaction((tx) => fn(wrap(tx)))) as Db['transaction'];
  return state;
}

/** The answer's read: the payment's whole ledger with its operations (getWithLedger, ledger). */
const isLedgerRead = (sql: string) => /json_agg\(o ORDER BY/.test(sql);

for (const [inline, N, remembered] of [[true, MANY, true], [true, MANY, false], [false, Math.max(20, Math.round(MANY / 4)), true]] as const) {
  describe(`operations per payment, partners ${inline ? 'answering inline' : 'called'}${inline && !remembered ? ', nothing remembered' : ''}`, () => {
    let t: TestApp;
    let m: Merchant;
    let watch: ReturnType<typeof spy>;
    before(async () => {
      // Rate limits and the request log off: their counters' sync and the log's flush (once a
      // second each) would add statements to the counts below.
      t = await createTestApp({ simInline: inline, maxOperationsPerPayment: N, ...(remembered ? {} : { recentPayments: 0 }),
        rateLimitTokenPerKey: 0, rateLimitTokenPerAddress: 0, rateLimitApiPerKey: 0, requestLogPerSecond: 0 });
      m = await t.createMerchant('Many operations');
      watch = spy(t.testDb.db);
    });
    after(() => t.close());

    let p: { id: string };
    const op = (kind: string, payload: Record<string, unknown>, key?: string) => t.app.inject({
      method: 'POST', url: `/v2/payments/${p.id}/${kind}`, headers: { ...m.auth, ...(key ? { 'x-idempotency-key': key } : {}) }, payload,
    });

    it(`${N} captures of one payment: event size, reads and writes per capture do not grow`, async () => {
      p = (await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: body(N + 1) })).json();
      const per: Array<{ statements: number; written: number; readOther: number; readLedger: number; answer: number; event: number }> = [];
      for (let k = 1; k <= N; k++) {
        watch.stats = [];
        watch.on = true;
        const res = await op('captures', { amount: 1 }, k === 1 ? 'first' : undefined);
        watch.on = false;
        assert.equal(res.statusCode, 200, res.body);
        const opId = String(res.headers['x-created-operation-id']);
        const ev = await t.testDb.db.query<{ n: number; type: string }>(
          `SELECT octet_length(data::text)::int AS n, type FROM webhook_events WHERE data->>'operation_id' = $1`, [opId]);
        assert.deepEqual(ev.rows.map((r) => r.type), ['payment.captured'], `capture #${k}: one event`);
        per.push({
          statements: watch.stats.length,
          written: watch.stats.reduce((s, x) => s + x.written, 0),
          readOther: watch.stats.filter((x) => !isLedgerRead(x.sql)).reduce((s, x) => s + x.read, 0),
          readLedger: watch.stats.filter((x) => isLedgerRead(x.sql)).reduce((s, x) => s + x.read, 0),
          answer: res.body.length,
          event: ev.rows[0]!.n,
        });
      }
      const early = per[9]!;
      const late = per[N - 1]!;
      const figures = JSON.stringify({ early, late });
      // (a) the event carries the summary and this capture: its size stays put (a few
      // bytes move with the digits of the amounts and the version).
      assert.ok(late.event <= early.event + 16, `event bytes ${figures}`);
      assert.ok(late.event < 3000, `event bytes ${figures}`);
      // (b) per capture: the same statements, the same bytes written, and the same bytes
      // read except the one ledger read the answer is built from.
      assert.equal(late.statements, early.statements, `statements ${figures}`);
      assert.ok(Math.abs(late.written - early.written) <= 64, `bytes written ${figures}`);
      assert.ok(Math.abs(late.readOther - early.readOther) <= 64, `bytes read besides the answer's ledger ${figures}`);
      // That ledger read grows only with the answer (a Payment lists its operations; the
      // operation limit bounds it).
      if (remembered) {
        assert.equal(per.filter((x) => x.readLedger !== 0).length, 0, 'no ledger read: the answer is built from what this process wrote');
        // Inline: the capture is one statement. Called: the reservation, then the
        // settlement with the conclusion, around the simulator's own statements.
        const own = watch.stats.filter((x) => !/sim_partner_operations|sim_follow_up|^(BEGIN|COMMIT)/.test(x.sql)).map((x) => x.sql.slice(0, 40));
        assert.equal(own.length, inline ? 1 : 2, `payd's statements per capture ${figures} ${JSON.stringify(own)}`);
      } else {
        assert.equal(per.filter((x) => x.readLedger === 0).length, 0, 'one ledger read per capture, for the answer');
      }
      assert.ok(late.readLedger - early.readLedger <= 3 * (late.answer - early.answer), `ledger read vs answer ${figures}`);

      // The running totals the decisions use are the sums of the ledger.
      const { rows } = await t.testDb.db.query<Record<string, number>>(
        `SELECT p.total_captured, p.reserved_capture, p.total_authorized, p.operation_count,
                (SELECT coalesce(sum(amount), 0) FROM partner_transactions WHERE payment_id = p.id AND kind = 'CAPTURE' AND status = 'SUCCESS')::bigint AS ledger_captured,
                (SELECT count(*) FROM payment_operations WHERE payment_id = p.id)::int AS ops
           FROM payments p WHERE p.id = $1`, [p.id]);
      assert.deepEqual(rows[0], { total_captured: N, reserved_capture: 0, total_authorized: N + 1, operation_count: N, ledger_captured: N, ops: N });
      const now = (await t.app.inject({ url: `/v2/payments/${p.id}`, headers: m.auth })).json();
      assert.equal(now.captures.length, N);
      assert.equal(now.amounts.total_captured, N);
      assert.equal(now.amounts.available_to_capture, 1);
    });

    it(`the operation limit (${N} here): the next operation is a 400 problem naming it, and nothing is written or sent`, async () => {
      const n = (sql: string) => t.testDb.db.query<{ n: number }>(sql, [p.id]).then((r) => r.rows[0]!.n);
      const written = async () => ({
        operations: await n('SELECT count(*)::int AS n FROM payment_operations WHERE payment_id = $1'),
        ledger: await n('SELECT count(*)::int AS n FROM partner_transactions WHERE payment_id = $1'),
        events: await n(`SELECT count(*)::int AS n FROM webhook_events WHERE data->>'id' = $1`),
        partner: await n('SELECT count(*)::int AS n FROM sim_partner_operations WHERE $1::text IS NOT NULL'),
        version: await n('SELECT version AS n FROM payments WHERE id = $1'),
      });
      const before = await written();
      assert.equal(before.operations, N);
      for (const [kind, payload] of [['captures', { amount: 1 }], ['refunds', { amount: 1 }], ['voids', {}]] as const) {
        const problem = expectProblem(await op(kind, payload), 400);
        assert.equal(problem.type, 'urn:eu.service:operation-limit-reached');
        assert.equal(problem.title, 'Operation limit reached');
        assert.equal(problem.max_operations, N);
        assert.match(String(problem.detail), new RegExp(`at most ${N}\\b`));
      }
      assert.deepEqual(await written(), before, 'no operation, ledger row, event, version or partner call');
      // A replayed key still answers as a replay, not as the limit.
      const replay = await op('captures', { amount: 1 }, 'first');
      assert.equal(replay.statusCode, 409, replay.body);
      const now = (await t.app.inject({ url: `/v2/payments/${p.id}`, headers: m.auth })).json();
      assert.deepEqual([now.amounts.total_captured, now.amounts.total_refunded, now.amounts.total_voided], [N, 0, 0]);
    });

    it('the running totals on every payment row are the sums of its ledger, through splits, refunds, voids and failures', async () => {
      const pay = async (split: unknown[]) => {
        const amount = (split as Array<{ amount: number }>).reduce((x, y) => x + y.amount, 0);
        return (await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: { amount, currency: 'EUR', split } })).json();
      };
      const cardPart = (amount: number, number = '4242424242424242') => ({ partner: 'card-sim', method: 'CARD', amount, instrument: { ...card, number } });
      const giftPart = (amount: number) => ({ partner: 'gift-sim', method: 'GIFT_CARD', amount, instrument: { type: 'GIFT_CARD', number: '6036280000001234' } });
      const act = async (id: string, kind: string, payload: Record<string, unknown>) =>
        t.app.inject({ method: 'POST', url: `/v2/payments/${id}/${kind}`, headers: m.auth, payload });
      const split = await pay([giftPart(300), cardPart(700)]);
      assert.equal((await act(split.id, 'captures', { amount: 400 })).statusCode, 200); // gift 300 + card 100
      assert.equal((await act(split.id, 'refunds', { amount: 150 })).statusCode, 200); // card 100 + gift 50
      assert.equal((await act(split.id, 'captures', { amount: 100 })).statusCode, 200);
      assert.equal((await act(split.id, 'voids', {})).statusCode, 200);
      const declined = await pay([cardPart(500, '4000000000000341')]);
      assert.equal((await act(declined.id, 'captures', { amount: 200 })).statusCode, 200); // FAILURE
      const conflict = await pay([giftPart(100), cardPart(400, '4000000000000341')]);
      assert.equal((await act(conflict.id, 'captures', { amount: 500 })).statusCode, 200); // CONFLICT
      await pay([cardPart(500, '4000000000000002')]); // refused
      // Every payment's stored running totals and operation count against its ledger, by the
      // running-totals rule itself (test/helpers/invariants.ts).
      const { rows } = await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments');
      assert.ok(rows[0]!.n >= 5);
      assert.deepEqual(await storedTotalsDiffering(t.testDb.db), [], 'each payment: stored operation_count, authorize_pending, totals and reserved sums equal its ledger');
      const s = (await t.app.inject({ url: `/v2/payments/${split.id}`, headers: m.auth })).json();
      assert.deepEqual([s.amounts.total_captured, s.amounts.total_refunded, s.amounts.total_voided], [500, 150, 500]);
    });
  });
}

describe('operations per payment: the setting', () => {
  it('PAYD_MAX_OPERATIONS_PER_PAYMENT defaults to 200 and is checked at start-up', async () => {
    const { loadConfig, ConfigError } = await import('../../src/config.ts');
    assert.equal(loadConfig({}).maxOperationsPerPayment, 200);
    assert.equal(loadConfig({ PAYD_MAX_OPERATIONS_PER_PAYMENT: '50' }).maxOperationsPerPayment, 50);
    assert.throws(() => loadConfig({ PAYD_MAX_OPERATIONS_PER_PAYMENT: '0' }), ConfigError);
  });
});
