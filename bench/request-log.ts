// What the dashboard's request log costs (docs/decisions.md "Request log"): on the request
// path, one record() (the onResponse hook's work: an entry built and pushed into its
// entity's buffer), timed over many calls; off the path, the flush, one INSERT of a batch
// into api_request_log on PostgreSQL, timed per row for batches of 200 and 1000 rows (a
// second of calls at the default bound and at 1000 calls a second), against one INSERT
// per call, the design it replaced. Blocks alternate to spread the machine's swings.
//
//   node --import tsx bench/request-log.ts
//
// Env: BENCH_PG (postgres://postgres@127.0.0.1:5432), BENCH_ROWS (20000 rows per way).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createPgDb } from '../src/platform/db/pg.ts';
import { migrate } from '../src/platform/db/migrator.ts';
import { RequestLog } from '../src/platform/observability/request-log.ts';
import { type RequestLogEntry, requestLogRepo } from '../src/platform/observability/request-log.repo.ts';

const root = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';
const rows = Number(process.env.BENCH_ROWS ?? 20000);
const name = `payd_request_log_${process.pid}`;
const entity = randomUUID();
const entry = (i: number): RequestLogEntry => ({
  entity_id: entity, created_at: new Date().toISOString(), method: 'POST', route: '/v2/payments/:id/captures', status: 200, duration_ms: 12,
  request_id: randomUUID(), idempotency_key: `key-${i}`, api_key_id: null,
});

// The hot path: record() into a buffer that a flush empties every 1000 calls (no database).
{
  const log = new RequestLog(undefined as never, { perSecond: 1000 });
  const n = 1_000_000;
  for (let i = 0; i < 100_000; i++) { log.record(entry(i)); if (i % 1000 === 999) (log as unknown as { buffers: Map<string, unknown> }).buffers.clear(); }
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    log.record(entry(i));
    if (i % 1000 === 999) (log as unknown as { buffers: Map<string, unknown> }).buffers.clear();
  }
  const ns = Number(process.hrtime.bigint() - t0) / n;
  console.log(`record(), entry built and buffered: ${(ns / 1000).toFixed(2)} µs a call (${n} calls)`);
}

const admin = new pg.Client({ connectionString: `${root}/postgres` });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
try {
  const db = createPgDb(`${root}/${name}`, 2);
  await migrate(db);
  const ways: Array<[string, (batch: RequestLogEntry[]) => Promise<void>, number]> = [
    ['one INSERT a call', async (batch) => { for (const r of batch) await requestLogRepo.insert(db, [r]); }, 200],
    ['a batch of 200 a statement', (batch) => requestLogRepo.insert(db, batch), 200],
    ['a batch of 1000 a statement', (batch) => requestLogRepo.insert(db, batch), 1000],
  ];
  const totals = new Map<string, { ms: number; rows: number }>();
  for (let block = 0; block < 4; block++) {
    for (const [label, insert, size] of ways) {
      const per = Math.ceil(rows / 4 / size);
      const t0 = performance.now();
      for (let b = 0; b < per; b++) await insert(Array.from({ length: size }, (_, i) => entry(i)));
      const s = totals.get(label) ?? { ms: 0, rows: 0 };
      s.ms += performance.now() - t0;
      s.rows += per * size;
      totals.set(label, s);
    }
  }
  for (const [label, s] of totals) console.log(`${label.padEnd(28)} ${(s.ms * 1000 / s.rows).toFixed(1).padStart(7)} µs a row (${s.rows} rows, wall time on one connection)`);
  const del = performance.now();
  const removed = await requestLogRepo.deleteOlderThan(db, new Date(Date.now() + 60_000));
  console.log(`retention delete: ${removed} rows in ${Math.round(performance.now() - del)} ms`);
  await db.close();
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
