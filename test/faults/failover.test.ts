// Primary failover (issue 24): `payd start` with DATABASE_URL naming two hosts, the
// standby first (postgres://…@standby,primary/…), a primary with a synchronous streaming
// standby (pg-pair.ts). payd finds the primary at start-up; flows of payment + capture
// run, a client retrying 503s with the same idempotency key as Retry-After says (a 409
// write-conflict then names what the first call created, as the spec says); the
// primary's postmaster is SIGKILLed mid-load. While no host takes writes payd answers
// 503 + Retry-After at once (no hang); once the standby is promoted, payd writes to it
// within seconds with no restart. Afterwards: every payment and capture that got a 2xx
// is on the new primary, no flow created two payments, the money invariants hold.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPgDb } from '../../src/platform/db/pg.ts';
import { PrimaryChoice, splitHosts } from '../../src/platform/db/hosts.ts';
import { loadConfig } from '../../src/config.ts';
import { moneyInvariants } from '../helpers/invariants.ts';
import { call, onboard, type PaydProcess, startPayd } from '../helpers/processes.ts';
import { envInt, sleep } from './db-fixture.ts';
import { killPostmaster, type PgPair, startPgPair } from './pg-pair.ts';

const FLOWS = envInt('PAYD_FAILOVER_FLOWS', 24);
const PARALLEL = 6;
const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' };

describe('several hosts in DATABASE_URL', () => {
  it('splits libpq\'s multi-host URL into one URL per host, keeping user, password, database and parameters', () => {
    assert.deepEqual(splitHosts('postgres://u:p%40ss@db1:5432,db2:5433/payd?sslmode=require&target_session_attrs=read-write'), [
      'postgres://u:p%40ss@db1:5432/payd?sslmode=require', 'postgres://u:p%40ss@db2:5433/payd?sslmode=require',
    ]);
    assert.deepEqual(splitHosts('postgresql://db1,db2/payd'), ['postgresql://db1/payd', 'postgresql://db2/payd']);
    assert.deepEqual(splitHosts('postgres://u@db1:5432/payd'), ['postgres://u@db1:5432/payd'], 'one host: as given');
  });
  it('moves the choice to the next host once per failure of the current one', () => {
    const c = new PrimaryChoice(['a', 'b', 'c']);
    c.failed('a');
    c.failed('a'); // a second report of the same failure moves nothing
    assert.equal(c.current(), 'b');
    c.failed('b');
    c.failed('c');
    assert.equal(c.current(), 'a', 'round robin');
  });
  it('the configuration accepts several hosts and refuses a bad one by name', () => {
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://u@db1:5432,db2:5432/payd' }).databaseUrl, 'postgres://u@db1:5432,db2:5432/payd');
    assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://u@db1:5432,db 2:x/payd' }), /DATABASE_URL must be a postgres/);
  });
});

describe('primary failover: two hosts in DATABASE_URL, the primary killed, the standby promoted', () => {
  let pair: PgPair;
  let server: PaydProcess;
  before(async () => {
    pair = await startPgPair();
    server = await startPayd({
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pair.standby.port},127.0.0.1:${pair.primary.port}/postgres`,
      PAYD_SIM_INLINE: 'true', PAYD_RECOVERY_INTERVAL_MS: '500', PAYD_PARTNER_TIMEOUT_MS: '1500', PAYD_RECOVERY_GRACE_SECONDS: '2',
    });
  });
  after(async () => {
    await server?.stop();
    pair?.close();
  });

  it('answers 503 + Retry-After while no host takes writes, writes to the promoted standby within seconds, loses and doubles nothing', async (t) => {
    const m = await onboard(server.base);
    const h = (key: string) => ({ ...m.auth, 'x-idempotency-key': key });
    type Outcome = { payment?: string; captured: boolean; tries: number };
    const outcomes = new Map<number, Outcome>();
    const statuses = new Map<number, number>();
    let killed = false;
    let promotedAt = 0;
    let firstWriteAfterPromotion = 0;
    let refusedAt: number | undefined;
    let replays = 0;
    /** The payment once its authorization is settled (recovery settles one whose creation met the outage). */
    const settled = async (id: string) => {
      for (let i = 0; ; i++) {
        const res = await call(server.base, 'GET', `/v2/payments/${id}`, m.auth);
        if (res.status === 200 && res.body!.authorization.status !== 'PENDING') return res.body!;
        assert.ok(i < 100, `payment ${id} settled (${res.status} ${JSON.stringify(res.body)})`);
        await sleep(200);
      }
    };

    /** One request retried while it answers 503 (what Retry-After tells a client), the same key each time. */
    const persist = async (o: Outcome, path: string, key: string, body: unknown) => {
      for (;;) {
        o.tries++;
        const started = Date.now();
        const res = await call(server.base, 'POST', path, h(key), body).catch(() => ({ status: 0, headers: new Headers(), body: undefined }));
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 503) {
          assert.ok(Number(res.headers.get('retry-after')) > 0, 'a 503 says when to retry');
          assert.ok(Date.now() - started < 8000, `a 503 came after ${Date.now() - started} ms: a request waited instead of failing fast`);
          refusedAt ??= Date.now();
          await sleep(300);
          continue;
        }
        // The spec's replay answer: the first call got through (its answer was lost to the
        // outage); resource_id names what it created.
        if (res.status === 409 && res.body?.type === 'urn:eu.service:write-conflict') {
          replays++;
          return { id: res.body.resource_id as string };
        }
        assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
        if (promotedAt && !firstWriteAfterPromotion) firstWriteAfterPromotion = Date.now();
        return res.body!;
      }
    };
    const flow = async (i: number) => {
      const o: Outcome = { captured: false, tries: 0 };
      outcomes.set(i, o);
      const p = await persist(o, '/v2/payments', `fo-pay-${i}`, {
        amount: 1000 + i, currency: 'EUR', capture_mode: 'MANUAL', order: { reference: `failover-${i}` },
        split: [{ partner: 'card-sim', method: 'CARD', amount: 1000 + i, instrument: card }],
      });
      o.payment = p.id as string;
      assert.equal((await settled(o.payment)).authorization.status, 'AUTHORIZED');
      await persist(o, `/v2/payments/${o.payment}/captures`, `fo-cap-${i}`, { amount: 1000 + i });
      o.captured = true;
    };

    // Flows PARALLEL at a time; a third of the way in, the primary dies; 1.5 s later the
    // standby is promoted (Patroni's ttl would take longer; payd's part is the same).
    let next = 0;
    const worker = async () => {
      while (next < FLOWS) await flow(next++);
    };
    const killer = (async () => {
      while (next < FLOWS / 3) await sleep(20);
      killPostmaster(pair.primary);
      killed = true;
      await sleep(1500);
      pair.promote();
      promotedAt = Date.now();
    })();
    await Promise.all([...Array.from({ length: PARALLEL }, worker), killer]);
    assert.ok(killed && promotedAt > 0);

    const resumeMs = firstWriteAfterPromotion - promotedAt;
    t.diagnostic(`failover: ${FLOWS} flows, statuses ${JSON.stringify(Object.fromEntries(statuses))}, replays answered 409 ${replays}, first 503 ${refusedAt ? 'seen' : 'not seen'}, first write ${resumeMs} ms after the promotion`);
    assert.ok(statuses.get(503), 'requests met the outage (503) while no host took writes');
    assert.ok(resumeMs < 15_000, `writes resumed ${resumeMs} ms after the promotion`);

    // Every flow completed, each payment exactly once, on the new primary.
    const db = createPgDb(pair.standby.url(), 2);
    try {
      const { rows } = await db.query<{ reference: string; n: number; captured: number }>(
        `SELECT p.order_reference AS reference, count(DISTINCT p.id)::int AS n,
                coalesce(sum(t.amount) FILTER (WHERE t.kind = 'CAPTURE' AND t.status = 'SUCCESS'), 0)::int AS captured
           FROM payments p LEFT JOIN partner_transactions t ON t.payment_id = p.id
          WHERE p.entity_id = $1 GROUP BY 1`, [m.entityId]);
      const byRef = new Map(rows.map((r) => [r.reference, r]));
      for (let i = 0; i < FLOWS; i++) {
        const o = outcomes.get(i)!;
        assert.ok(o.captured, `flow ${i} completed`);
        const r = byRef.get(`failover-${i}`);
        assert.equal(r?.n, 1, `flow ${i}: one payment (${r?.n ?? 0} found)`);
        assert.equal(r?.captured, 1000 + i, `flow ${i}: captured once, in full`);
      }
      const report = await moneyInvariants(db);
      assert.deepEqual(report.violations, []);
    } finally {
      await db.close();
    }
    // The API reads them back from the new primary.
    const back = await call(server.base, 'GET', `/v2/payments/${outcomes.get(0)!.payment}`, m.auth);
    assert.equal(back.status, 200);
    assert.equal(back.body!.amounts.total_captured, 1000, JSON.stringify(back.body));
  });
});
