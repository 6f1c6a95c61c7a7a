// What the running-total triggers of migration 0015 cost (payd issue 16): the statements
// payd's inline paths send for a creation and a capture, timed on one connection, with
// the triggers keeping the payment's sums (as shipped in 0015) against the same rows
// with the sums written by the statement itself (triggers switched off for the run), as
// payd writes them since migrations 0017 (settled rows) and 0031 (every inserted row).
// Blocks alternate (triggers, none, triggers, ...) to spread the machine's swings.
//
//   node --import tsx bench/running-totals.ts
//
// Env: BENCH_PG (postgres://postgres@127.0.0.1:5432), BENCH_N (2000 per block),
// BENCH_SYNC (off: synchronous_commit off, to time the statements' own work without the
// WAL flush every commit also waits for; on: with it).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createPgDb } from '../src/platform/db/pg.ts';
import { migrate } from '../src/platform/db/migrator.ts';

const root = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';
const n = Number(process.env.BENCH_N ?? 2000);
const name = `payd_totals_${process.pid}`;
const admin = new pg.Client({ connectionString: `${root}/postgres` });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
try {
  const db = createPgDb(`${root}/${name}`, 2);
  await migrate(db);
  await db.close();
  const c = new pg.Client({ connectionString: `${root}/${name}` });
  c.on('error', () => {});
  await c.connect();
  await c.query(`SET synchronous_commit = ${process.env.BENCH_SYNC === 'on' ? 'on' : 'off'}`);
  const entity = randomUUID();
  await c.query(`INSERT INTO entities (id, name) VALUES ($1, 'bench')`, [entity]);
  const data = JSON.stringify({ payment: 'x'.repeat(2500) });
  const card = JSON.stringify({ brand: 'VISA', last4: '4242' });

  // A creation: the payment, its AUTHORIZED authorization row and its event (as insertConcluded).
  const create = (totals: boolean) => `WITH p AS (
      INSERT INTO payments (id, entity_id, amount, currency, capture_mode, split, authorization_status${totals ? ', total_authorized' : ''})
      VALUES ($1, $2, 5000, 'EUR', 'MANUAL', '[]', 'AUTHORIZED'${totals ? ', 5000' : ''}) RETURNING id),
    t AS (INSERT INTO partner_transactions (id, payment_id, kind, seq, partner, method, amount, status, partner_key, card)
      SELECT $3, p.id, 'AUTHORIZATION', 1, 'card-sim', 'CARD', 5000, 'AUTHORIZED', $7, $5 FROM p)
    INSERT INTO webhook_events (id, entity_id, type, data) SELECT $4, $2, 'payment.authorized', $6 FROM p`;
  // A capture of one cent: the payment's next version, the operation, its SUCCESS row, its event (as insertOperationConcluded).
  const capture = (totals: boolean) => `WITH u AS (
      UPDATE payments SET version = version + 1, updated_at = now()${totals ? ', operation_count = operation_count + 1, total_captured = total_captured + 1' : ''}
       WHERE id = $1 RETURNING id, entity_id),
    o AS (INSERT INTO payment_operations (id, payment_id, kind, amount, status) SELECT $2, u.id, 'CAPTURE', 1, 'SUCCESS' FROM u RETURNING id),
    t AS (INSERT INTO partner_transactions (id, payment_id, operation_id, parent_id, kind, seq, partner, method, amount, status, partner_key)
      SELECT $3, $1, o.id, $5, 'CAPTURE', $6, 'card-sim', 'CARD', 1, 'SUCCESS', $8 FROM o)
    INSERT INTO webhook_events (id, entity_id, type, data) SELECT $4, u.entity_id, 'payment.captured', $7 FROM u`;

  // The insert triggers as 0015 shipped them (for every row; since migration 0031 they
  // count only rows no statement counted) for the blocks that time them, in this bench's
  // own database; none for the others.
  const setTriggers = async (on: boolean) => {
    await c.query(`ALTER TABLE partner_transactions ${on ? 'ENABLE' : 'DISABLE'} TRIGGER partner_transactions_totals_upd`);
    await c.query('DROP TRIGGER IF EXISTS partner_transactions_totals_ins ON partner_transactions');
    await c.query('DROP TRIGGER IF EXISTS payment_operations_count ON payment_operations');
    if (on) {
      await c.query(`CREATE TRIGGER partner_transactions_totals_ins AFTER INSERT ON partner_transactions
        FOR EACH ROW EXECUTE FUNCTION payd_ledger_totals()`);
      await c.query(`CREATE TRIGGER payment_operations_count AFTER INSERT ON payment_operations
        FOR EACH ROW EXECUTE FUNCTION payd_operation_count()`);
    }
  };

  const times = { triggers: { create: [] as number[], capture: [] as number[] }, none: { create: [] as number[], capture: [] as number[] } };
  for (let round = 0; round < 6; round++) {
    const triggers = round % 2 === 0;
    await setTriggers(triggers);
    const createSql = create(!triggers);
    const captureSql = capture(!triggers);
    const made: Array<{ id: string; auth: string }> = [];
    let t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const id = randomUUID();
      const auth = randomUUID();
      await c.query({ name: `c${triggers}`, text: createSql, values: [id, entity, auth, randomUUID(), card, data, `${id}:1`] });
      made.push({ id, auth });
    }
    times[triggers ? 'triggers' : 'none'].create.push(Number(process.hrtime.bigint() - t0) / 1e3 / n);
    t0 = process.hrtime.bigint();
    for (const [i, m] of made.entries()) {
      await c.query({ name: `k${triggers}`, text: captureSql, values: [m.id, randomUUID(), randomUUID(), randomUUID(), m.auth, 2 + (i % 1), data, `${m.id}:2`] });
    }
    times[triggers ? 'triggers' : 'none'].capture.push(Number(process.hrtime.bigint() - t0) / 1e3 / n);
  }
  const check = await c.query<{ bad: number }>(`SELECT count(*)::int AS bad FROM payments WHERE total_authorized <> 5000 OR total_captured <> 1 OR operation_count <> 1`);
  await c.end();
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' / ');
  console.log(`running totals, ${n} statements per block, synchronous_commit ${process.env.BENCH_SYNC === 'on' ? 'on' : 'off'} (µs per statement, blocks in order)`);
  console.log(`creation: triggers ${fmt(times.triggers.create)}   sums in the statement ${fmt(times.none.create)}`);
  console.log(`capture:  triggers ${fmt(times.triggers.capture)}   sums in the statement ${fmt(times.none.capture)}`);
  console.log(`payments whose sums differ from their ledger: ${check.rows[0]!.bad} (both ways must keep them equal)`);
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
