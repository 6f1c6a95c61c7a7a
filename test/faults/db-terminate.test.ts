// pg_terminate_backend of payd's connections while captures run (issue 12: a terminated
// backend under a checked-out client made payd exit, 3 times in 51 rounds). Each round
// starts concurrent captures on a fresh payment, waits a seeded random moment and
// terminates every backend payd holds on the test database (its pool, its transactions,
// its LISTEN connection). The process must never exit, every answer is 200, 400, 409 or
// 503 + Retry-After, a 503 retried with its idempotency key settles, and the money
// invariants hold at the end. PAYD_FAULT_ROUNDS (default 20) and PAYD_FAULT_SEED.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import type { TestDb } from '../helpers/db.ts';
import { onboard, type PaydProcess, startPayd } from '../helpers/processes.ts';
import {
  type Answer, assertUnavailable, attempt, createPgTestDb, envInt, paymentBody, probe, seeded, sleep, until,
} from './db-fixture.ts';
import { type Acknowledged, checkInvariants } from '../helpers/invariants.ts';

const ROUNDS = envInt('PAYD_FAULT_ROUNDS', 20);
const SEED = envInt('PAYD_FAULT_SEED', Date.now() % 1_000_000_000);
const CAPTURES = 5;

describe(`pg_terminate_backend during captures (${ROUNDS} rounds, seed ${SEED})`, () => {
  let t: TestDb & { url: string; name: string };
  let server: PaydProcess;
  let killer: pg.Client;
  before(async () => {
    t = await createPgTestDb();
    killer = new pg.Client({ connectionString: t.url });
    await killer.connect();
    server = await startPayd({ DATABASE_URL: t.url, PAYD_RECOVERY_GRACE_SECONDS: '1', PAYD_PARTNER_TIMEOUT_MS: '500', PAYD_RECOVERY_INTERVAL_MS: '300', PAYD_DB_POOL_SIZE: '10' });
  });
  after(async () => {
    await server?.stop();
    await killer?.end();
    await t?.close();
  });

  it('payd never exits, answers 503 + Retry-After at worst, and the invariants hold', async (ctx) => {
    ctx.diagnostic(`seed ${SEED} (PAYD_FAULT_SEED=${SEED} PAYD_FAULT_ROUNDS=${ROUNDS} to replay)`);
    const random = seeded(SEED);
    const { auth } = await onboard(server.base);
    const acknowledged: Acknowledged = new Map();
    const answers: Answer[] = [];
    let terminated = 0;
    const peaks = { fds: 0, rssMb: 0 };
    const alive = () => assert.equal(server.child.exitCode ?? server.child.signalCode, null, `payd exited (${terminated} backends terminated so far)`);

    /** Sends until the answer is final (anything but 503): what a client honouring Retry-After does. */
    const settle = async (method: string, path: string, key: string, body: unknown) => {
      for (let i = 0; ; i++) {
        const a = await attempt(server.base, method, path, { ...auth, 'x-idempotency-key': key }, body);
        answers.push(a);
        if (a.status !== 503) return a;
        assert.ok(i < 100, `${method} ${path} still 503 after 100 retries`);
        await sleep(100);
      }
    };

    for (let round = 0; round < ROUNDS; round++) {
      const created = await settle('POST', '/v2/payments', `pay-${round}`, paymentBody(CAPTURES * 1000));
      alive();
      if (created.status !== 200 || created.body?.authorization?.status !== 'AUTHORIZED') continue;
      const id = created.body.id as string;
      const captures = Array.from({ length: CAPTURES }, (_, c) => settle('POST', `/v2/payments/${id}/captures`, `cap-${c}`, { amount: 1000 }));
      await sleep(Math.floor(random() * 40));
      const { rows } = await killer.query<{ ok: boolean }>(
        'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [t.name],
      );
      terminated += rows.filter((r) => r.ok).length;
      for (const r of await Promise.all(captures)) {
        if (r.status === 200) acknowledged.set(id, Math.max(acknowledged.get(id) ?? 0, r.body!.amounts.total_captured as number));
      }
      const p = probe(server.child.pid!);
      peaks.fds = Math.max(peaks.fds, p.fds);
      peaks.rssMb = Math.max(peaks.rssMb, p.rssMb);
      alive();
    }

    const inv = await checkInvariants(t, server.base, auth, acknowledged);
    alive();
    // Each feed (key revocations, eligibility rules) listens again, on exactly one connection
    // each (one reconnect loop per feed).
    await until(server.child, 'one LISTEN connection per feed', async () => {
      const { rows } = await killer.query<{ query: string; n: number }>(
        `SELECT query, count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN %' GROUP BY query ORDER BY query`, [t.name]);
      return JSON.stringify(rows) === JSON.stringify([{ query: 'LISTEN payd_api_key_revoked', n: 1 }, { query: 'LISTEN payd_eligibility_rules', n: 1 }]);
    });
    const tally = answers.reduce<Record<number, number>>((m, a) => ((m[a.status] = (m[a.status] ?? 0) + 1), m), {});
    ctx.diagnostic(`${ROUNDS} rounds, ${terminated} backends terminated; answers ${JSON.stringify(tally)}; peak ${peaks.fds} fds ${peaks.rssMb} MB; ${inv.payments} payments, ${inv.captured} captured`);
    assert.ok(terminated >= ROUNDS, 'backends were terminated');
    const unexpected = answers.filter((a) => ![200, 400, 409, 503].includes(a.status));
    assert.equal(unexpected.length, 0, `unexpected answers: ${JSON.stringify(unexpected.slice(0, 3))}`);
    for (const a of answers.filter((x) => x.status === 503)) assertUnavailable(a);
  });
});
