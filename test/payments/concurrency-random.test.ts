// Concurrent money operations, a seeded random mix: two payd processes (`payd start`,
// workers on) on one PostgreSQL database take random captures, refunds and voids, many at
// once, on card-only and split gift card + card payments, with cards whose captures time
// out or are declined, and with replayed idempotency keys. Afterwards, once every
// operation has settled: no over-capture, no over-refund, the API's amounts equal the
// ledger, payd and the simulated partners agree on every key, nothing PENDING
// (test/helpers/invariants.ts). The targeted cases: concurrency-processes.test.ts.
// (A file of its own: with the targeted cases it outgrew the per-file time bound on a
// loaded 2-core machine.)
//
// PAYD_FAULT_SEED replays a run (the seed is printed); PAYD_FAULT_OPS sets the number of
// operations (CI default 160; try 2000 on demand). PostgreSQL is needed: the scenario
// creates its own database on DATABASE_URL's server, or on the local one.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, POSTGRES_URL, type TestDb } from '../helpers/db.ts';
import { apiAgreesWithLedger, moneyInvariants } from '../helpers/invariants.ts';
import { call as plainCall, onboard, type PaydProcess, poll, startPayd } from '../helpers/processes.ts';
import { seeded } from '../faults/db-fixture.ts';

const SEED = Number(process.env.PAYD_FAULT_SEED ?? Date.now() % 2 ** 31);
const OPS = Number(process.env.PAYD_FAULT_OPS ?? 160);
const PAYMENTS = Math.max(8, Math.ceil(OPS / 8));
const PARALLEL = 16;

const CARDS = [
  '4242424242424242', // approved
  '4000000000000416', // captures time out, found SUCCESS by a later sync
  '4000000000000341', // every capture declined
  '4000000000005126', // every refund declined
  '4000000000000408', // the authorization times out (settled later by a sync)
  '4000000000000119', // the acquirer answers a processing error
];
const cardNumbered = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2030', cvv: '123' });

describe(`two payd processes on one PostgreSQL database: random concurrent operations (seed ${SEED}, ${OPS} operations)`, () => {
  let testDb: TestDb;
  let a: PaydProcess;
  let b: PaydProcess;
  before(async () => {
    testDb = await createTestDb(POSTGRES_URL);
    // Partners keep records (so that their ledger can be compared with payd's); short
    // partner timeout and recovery grace so that time-outs settle within the test.
    const env = {
      DATABASE_URL: testDb.url!, PAYD_SIM_INLINE: 'false', PAYD_RECOVERY_INTERVAL_MS: '500',
      PAYD_PARTNER_TIMEOUT_MS: '2000', PAYD_RECOVERY_GRACE_SECONDS: '3',
    };
    a = await startPayd(env);
    b = await startPayd({ ...env, PAYD_BASE_URL: a.base });
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await testDb?.close();
  });

  it('keeps every money invariant', async (t) => {
    t.diagnostic(`two-processes: PAYD_FAULT_SEED=${SEED} PAYD_FAULT_OPS=${OPS}`);
    const random = seeded(SEED);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const m = await onboard(a.base);
    const servers = [a.base, b.base];

    const payments: Array<{ id: string; amount: number }> = [];
    for (let i = 0; i < PAYMENTS; i++) {
      const amount = 1000 + Math.floor(random() * 9000);
      const giftPart = random() < 0.4 ? Math.min(amount - 100, 500 + Math.floor(random() * 2000)) : 0;
      const split = [
        ...(giftPart ? [{ partner: 'gift-sim', method: 'GIFT_CARD', amount: giftPart, instrument: { type: 'GIFT_CARD', number: `60362800${String(SEED % 1e6).padStart(6, '0')}${String(i).padStart(4, '0')}` } }] : []),
        { partner: 'card-sim', method: 'CARD', amount: amount - giftPart, instrument: cardNumbered(pick(CARDS)) },
      ];
      const res = await plainCall(pick(servers), 'POST', '/v2/payments', { ...m.auth, 'x-idempotency-key': `pay-${SEED}-${i}` },
        { amount, currency: 'EUR', capture_mode: 'MANUAL', order: { reference: `two-proc-${i}` }, split });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      if (res.body!.authorization.status === 'AUTHORIZED') payments.push({ id: res.body!.id, amount });
    }
    assert.ok(payments.length > 0, 'some payments were authorized');

    // Random operations, PARALLEL at a time, to both processes; a fifth reuse an earlier key.
    const statuses = new Map<number, number>();
    const keys: Array<{ payment: string; key: string; kind: string; amount: number }> = [];
    let sent = 0;
    const one = async (): Promise<void> => {
      const reuse = keys.length > 0 && random() < 0.2;
      const op = reuse ? pick(keys) : (() => {
        const p = pick(payments);
        const kind = pick(['captures', 'captures', 'refunds', 'voids'] as const);
        const amount = 1 + Math.floor(random() * (p.amount / 2));
        const o = { payment: p.id, key: `op-${SEED}-${sent}`, kind, amount };
        keys.push(o);
        return o;
      })();
      sent++;
      const res = await plainCall(pick(servers), 'POST', `/v2/payments/${op.payment}/${op.kind}`, { ...m.auth, 'x-idempotency-key': op.key }, { amount: op.amount });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      assert.ok(res.status < 500, `${op.kind} answered ${res.status}: ${JSON.stringify(res.body)}`);
      if (res.status >= 400) assert.match(String(res.headers.get('content-type')), /^application\/problem\+json/);
    };
    let next = 0;
    await Promise.all(Array.from({ length: PARALLEL }, async () => {
      while (next++ < OPS) await one();
    }));

    // Settle: the recovery workers of both processes finish what timed out; GET (which
    // asks the partners) settles the rest. Nothing may stay PENDING.
    const report = await poll(() => moneyInvariants(testDb.db), (r) => r.pending === 0, { withinMs: 60_000, everyMs: 500 });
    const disagreements: string[] = [];
    for (const p of payments) {
      const got = await plainCall(pick(servers), 'GET', `/v2/payments/${p.id}`, { ...m.auth, 'cache-control': 'max-age=60' });
      assert.equal(got.status, 200);
      disagreements.push(...apiAgreesWithLedger(p.id, got.body!.amounts, report.ledger.get(p.id)));
    }
    t.diagnostic(`two-processes: ${payments.length} payments, ${OPS} operations, answers ${JSON.stringify(Object.fromEntries(statuses))}, pending after settle ${report.pending}, violations ${report.violations.length + disagreements.length}`);
    assert.deepEqual(report.violations, []);
    assert.deepEqual(disagreements, []);
    assert.equal(report.pending, 0, 'nothing PENDING once settled');
  });
});
