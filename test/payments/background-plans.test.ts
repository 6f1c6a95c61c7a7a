// Background work that does not grow with history (issue 45, item 7): every periodic
// query (recovery, the challenge expiry, the webhook dispatcher, the gauges read at each
// scrape) reads an index that holds only the rows still in flight, and the idempotency
// lookup uses the unique key's index even as a generic plan. Checked with EXPLAIN on a
// table seeded with 100k settled payments (and their ledger rows, events and deliveries)
// next to a handful in flight: no Seq Scan of the big tables, the partial index named.
// The plans are PostgreSQL's: this test makes a PostgreSQL database of its own even on
// the PGlite pass (as test/faults does), since a plan is what production runs.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../src/platform/db/index.ts';
import { paymentsRepo } from '../../src/payments/payments.repo.ts';
import { deliveriesRepo } from '../../src/webhooks/deliveries.repo.ts';
import { CHALLENGE_AGES } from '../../src/payments/metrics.ts';
import { createPgTestDb } from '../faults/db-fixture.ts';
import type { TestDb } from '../helpers/db.ts';

const SEEDED = 100_000;
const BIG = ['payments', 'partner_transactions', 'payment_operations', 'webhook_events', 'webhook_deliveries'];
const ENTITY = '00000000-0000-4000-8000-000000000001';

interface PlanNode { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] }

const literal = (v: unknown): string => {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'number') return String(v);
  if (v instanceof Date) return `'${v.toISOString()}'`;
  if (Array.isArray(v)) return `'{${v.join(',')}}'`;
  return `'${String(v).replace(/'/g, "''")}'`;
};

function nodes(n: PlanNode): PlanNode[] {
  return [n, ...(n.Plans ?? []).flatMap(nodes)];
}

describe(`periodic queries and the idempotency lookup read only what is in flight (${SEEDED} payments)`, () => {
  let t: TestDb & { url: string };
  before(async () => {
    t = await createPgTestDb();
  });
  after(() => t?.close());

  /**
   * The generic plan (plan_cache_mode = force_generic_plan: what a prepared statement
   * runs after five executions) of every statement `run` sends, with its parameters.
   */
  async function plans(run: (q: Queryable) => Promise<unknown>): Promise<Array<{ sql: string; nodes: PlanNode[] }>> {
    const sent: Array<{ sql: string; params: unknown[] }> = [];
    const recorder = {
      async query(sql: string, params: unknown[] = []) {
        sent.push({ sql, params });
        return { rows: [{ counts: [], oldest_seconds: 0, pending: 0, due: 0, oldest_due_seconds: 0 }], rowCount: 0 };
      },
    } as unknown as Queryable;
    await run(recorder);
    const out = [];
    for (const s of sent) {
      const plan = await t.db.transaction(async (q) => {
        await q.query('SET LOCAL plan_cache_mode = force_generic_plan');
        await q.query(`PREPARE plan_check AS ${s.sql}`);
        const { rows } = await q.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
          `EXPLAIN (FORMAT JSON) EXECUTE plan_check${s.params.length ? `(${s.params.map(literal).join(', ')})` : ''}`);
        await q.query('DEALLOCATE plan_check');
        return rows[0]!['QUERY PLAN'][0]!.Plan;
      });
      out.push({ sql: s.sql, nodes: nodes(plan) });
    }
    return out;
  }

  function assertInFlight(what: string, found: Array<{ sql: string; nodes: PlanNode[] }>, indexes: string[]): void {
    assert.ok(found.length > 0, `${what}: a statement was sent`);
    const all = found.flatMap((f) => f.nodes);
    const seq = all.filter((n) => n['Node Type'] === 'Seq Scan' && BIG.includes(n['Relation Name'] ?? ''));
    assert.deepEqual(seq.map((n) => n['Relation Name']), [], `${what}: no Seq Scan of a table that grows with history\n${JSON.stringify(found.map((f) => f.nodes.map((n) => [n['Node Type'], n['Relation Name'], n['Index Name']])))}`);
    const used = new Set(all.map((n) => n['Index Name']).filter(Boolean));
    for (const i of indexes) assert.ok(used.has(i), `${what}: uses ${i} (used: ${[...used].join(', ')})`);
  }

  const lookup = (q: Queryable) => paymentsRepo.getByKey(q, ENTITY, 'order-42');

  it('on a freshly migrated database, the idempotency lookup\'s generic plan uses the unique key\'s index', async () => {
    assertInFlight('idempotency lookup (fresh)', await plans(lookup), ['payments_idempotency_key_idx']);
    const [only] = await plans(lookup);
    assert.ok(!only!.nodes.some((n) => n['Index Name'] === 'payments_entity_status_created_idx'), 'not the list index with a Filter on the key');
  });

  it('on 100k settled payments, every periodic query and the lookup read only the rows in flight', async () => {
    const db = t.db;
    await db.query(`INSERT INTO entities (id, name) VALUES ($1, 'Seeded shop')`, [ENTITY]);
    // History: settled payments, each with its authorization, a capture, its event and its delivered webhook.
    await db.query(`INSERT INTO payments (id, entity_id, amount, currency, capture_mode, split, authorization_status, idempotency_key, created_at, updated_at)
      SELECT md5('p' || i)::uuid, $1, 1000, 'EUR', 'MANUAL', '[]', 'AUTHORIZED', 'key-' || i, now() - make_interval(mins => i), now() - make_interval(mins => i)
        FROM generate_series(1, $2) i`, [ENTITY, SEEDED]);
    await db.query(`INSERT INTO payment_operations (id, payment_id, kind, amount, status, created_at, updated_at)
      SELECT md5('o' || i)::uuid, md5('p' || i)::uuid, 'CAPTURE', 1000, 'SUCCESS', now() - make_interval(mins => i), now() - make_interval(mins => i)
        FROM generate_series(1, $1) i`, [SEEDED]);
    await db.query(`INSERT INTO partner_transactions (id, payment_id, kind, seq, partner, method, amount, status, partner_key, redirection, created_at, updated_at)
      SELECT md5('t' || i)::uuid, md5('p' || i)::uuid, 'AUTHORIZATION', 1, 'card-sim', 'CARD', 1000, 'AUTHORIZED', 'a' || i, NULL,
             now() - make_interval(mins => i), now() - make_interval(mins => i)
        FROM generate_series(1, $1) i`, [SEEDED]);
    await db.query(`INSERT INTO webhook_events (id, entity_id, type, data, created_at)
      SELECT md5('e' || i)::uuid, $1, 'payment.authorized', '{}', now() - make_interval(mins => i) FROM generate_series(1, $2) i`, [ENTITY, SEEDED]);
    await db.query(`INSERT INTO webhook_deliveries (id, event_id, entity_id, reason, status, attempt_count, next_attempt_at, delivered_at, created_at, updated_at)
      SELECT md5('d' || i)::uuid, md5('e' || i)::uuid, $1, 'EVENT', 'DELIVERED', 1, now() - make_interval(mins => i), now(), now() - make_interval(mins => i), now()
        FROM generate_series(1, $2) i`, [ENTITY, SEEDED]);
    // In flight: a few payments processing, a challenge awaiting its shopper, a capture PENDING, a delivery due.
    for (let i = 0; i < 5; i++) {
      const id = randomUUID();
      await db.query(`INSERT INTO payments (id, entity_id, amount, currency, capture_mode, split, authorization_status, processing, idempotency_key)
        VALUES ($1, $2, 1000, 'EUR', 'MANUAL', '[]', 'PENDING', true, $3)`, [id, ENTITY, `live-${i}`]);
      await db.query(`INSERT INTO partner_transactions (id, payment_id, kind, seq, partner, method, amount, status, partner_key, redirection)
        VALUES ($1, $2, 'AUTHORIZATION', 1, 'card-sim', 'CARD', 1000, 'PENDING', $3, $4)`,
      [randomUUID(), id, `live-a${i}`, i === 0 ? '{"url": "https://payd.test/sim/acs/x", "method": "GET"}' : null]);
    }
    await db.query(`INSERT INTO payment_operations (id, payment_id, kind, amount, status) VALUES ($1, md5('p1')::uuid, 'CAPTURE', 10, 'PENDING')`, [randomUUID()]);
    await db.query(`INSERT INTO webhook_events (id, entity_id, type, data) VALUES ($1, $2, 'payment.authorized', '{}')`, [ENTITY, ENTITY]);
    await db.query(`INSERT INTO webhook_deliveries (id, event_id, entity_id, reason) VALUES ($1, $2, $2, 'EVENT')`, [randomUUID(), ENTITY]);
    await db.query('ANALYZE');

    const now = new Date();
    assertInFlight('recovery: stale payments', await plans((q) => paymentsRepo.stalePayments(q, 60, 100)),
      ['payments_processing_idx', 'partner_transactions_pending_idx', 'payment_operations_pending_idx']);
    assertInFlight('recovery: expired challenges', await plans((q) => paymentsRepo.expiredChallenges(q, now, 1800, 100)), ['partner_transactions_challenges_idx']);
    assertInFlight('metrics: challenges by age', await plans((q) => paymentsRepo.challengeAges(q, now, CHALLENGE_AGES.map((a) => a.from))), ['partner_transactions_challenges_idx']);
    assertInFlight('metrics: operations pending', await plans((q) => paymentsRepo.pendingOperations(q)), ['payment_operations_pending_idx']);
    assertInFlight('metrics: webhook backlog', await plans((q) => deliveriesRepo.backlog(q)), ['webhook_deliveries_due_idx']);
    assertInFlight('dispatcher: claim due deliveries', await plans((q) => deliveriesRepo.claimDue(q, 10, 30_000, randomUUID())), ['webhook_deliveries_due_idx']);
    assertInFlight('idempotency lookup (seeded)', await plans(lookup), ['payments_idempotency_key_idx']);
  });
});
