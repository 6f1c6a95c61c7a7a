// What a filtered list's first page costs as the entity grows (issue 43, item 8): one
// entity's payments (with their partner transactions, events, and one client session and
// payment link for ten payments) are seeded by SQL (bench/lists-seed.ts) into a fresh
// PostgreSQL database, step by step up to the largest size; at each size, after ANALYZE,
// every list filter of LIST_FILTERS is asked for its common, rare and absent value N
// times through the real app (Fastify inject: auth, validation, the statements, the JSON),
// and p50/p90/p99 of each are printed, with the database's own time for the page's
// statement (db ms: EXPLAIN ANALYZE, planning and execution, median of 5). Statistics
// of a size are those ANALYZE took at that size.
//
//   npm run bench:lists
//
// Env: BENCH_PG (postgres://postgres@127.0.0.1:5432/test: the server the bench database is
// made on, dropped at the end), BENCH_SIZES (10000,1000000,2000000), BENCH_N (50 requests
// a value, after 5 unmeasured), BENCH_LIMIT (50: the p99 in ms a row is marked over).
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { Queryable } from '../src/platform/db/index.ts';
import { createTestApp } from '../test/helpers/app.ts';
import { VIEW_FORMAT } from '../src/payments/payment-view.ts';
import { CUSTOM_PLAN } from '../src/platform/db/db.ts';
import { captured, LIST_FILTERS, runList, seedLists } from './lists-seed.ts';
import { quantile } from './paced.ts';

const server = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432/test';
const sizes = (process.env.BENCH_SIZES ?? '10000,1000000,2000000').split(',').map(Number);
const n = Number(process.env.BENCH_N ?? 50);
const limitMs = Number(process.env.BENCH_LIMIT ?? 50);

/**
 * Created ranges and filters together, as query strings, with seeded data's common, rare
 * and absent answers (bench/lists-seed.ts: created_at one second a row back from
 * 2026-11-01, so 2 million rows go back to about 2026-10-08).
 */
const COMBINED: Array<{ name: string; common: string; rare: string; absent: string }> = [
  { name: 'created range', common: 'created_gte=2026-10-01T00:00:00Z&created_lt=2026-11-01T00:00:00Z',
    rare: 'created_gte=2026-10-20T00:00:00Z&created_lt=2026-10-20T00:10:00Z', absent: 'created_gte=2026-12-01T00:00:00Z&created_lt=2026-12-02T00:00:00Z' },
  { name: 'created, oldest day', common: 'created_lt=2026-10-10T00:00:00Z', rare: 'created_gte=2026-10-08T00:00:00Z&created_lt=2026-10-08T01:00:00Z',
    absent: 'created_lt=2026-09-01T00:00:00Z' },
  { name: 'status+currency+amount', common: 'authorization_status=AUTHORIZED&currency=EUR&amount_gte=1000&amount_lte=50000',
    rare: 'authorization_status=AUTHORIZED&currency=JPY', absent: 'authorization_status=PENDING&currency=USD' },
  { name: 'email+status', common: 'customer_email=shopper1%40example.com&authorization_status=AUTHORIZED',
    rare: 'customer_email=shopper2%40example.com&authorization_status=REFUSED', absent: 'customer_email=shopper1%40example.com&authorization_status=PENDING' },
  { name: 'last four+currency', common: 'card_last_four=4242&currency=EUR&amount_gte=90000', rare: 'card_last_four=0005&currency=EUR',
    absent: 'card_last_four=0005&currency=JPY' },
  { name: 'range+status+email', common: 'created_gte=2026-10-15T00:00:00Z&authorization_status=AUTHORIZED&customer_email=shopper1%40example.com',
    rare: 'created_gte=2026-10-31T00:00:00Z&currency=USD&authorization_status=REFUSED', absent: 'created_gte=2026-10-31T00:00:00Z&currency=JPY&amount_gte=4000000' },
];

process.env.DATABASE_URL = server;
const t = await createTestApp({ rateLimitTokenPerKey: 0, rateLimitTokenPerAddress: 0, rateLimitApiPerKey: 0 });
let worst = 0;
try {
  const m = await t.createMerchant('Big shop');
  // Another entity with a tenth of the rows: its values are in the statistics too.
  const other = await t.createMerchant('Other shop');
  // Seeding runs on a connection of its own, without the app's statement timeout.
  const seeder = new pg.Client({ connectionString: t.testDb.url });
  seeder.on('error', () => {}); // (the database is dropped at the end with its connections)
  await seeder.connect();
  const seed: Queryable = {
    query: async <T>(sql: string, params: readonly unknown[] = []) => {
      const r = await seeder.query(sql, params as unknown[]);
      return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
    },
    exec: async (sql) => { await seeder.query(sql); },
  };
  /**
   * The database's own time for the page's statement (planning and execution, EXPLAIN
   * ANALYZE, median of 5): the plan's cost without HTTP, Node or the machine's other load.
   */
  const dbMs = async (entityId: string, c: Parameters<typeof runList>[2], value: string): Promise<number> => {
    const statements = await captured(seed, (q) => runList(q, entityId, c, value, format));
    const page = statements[statements.length - 1]!;
    const runs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { rows } = await seed.query<{ 'QUERY PLAN': Array<{ 'Planning Time': number; 'Execution Time': number }> }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${page.sql.replace(CUSTOM_PLAN, '')}`, page.params);
      const plan = rows[0]!['QUERY PLAN'][0]!;
      runs.push(plan['Planning Time'] + plan['Execution Time']);
    }
    return runs.sort((a, b) => a - b)[2]!;
  };
  let seeded = 0;
  // The stored views' format as the app reads them (payments.service.ts).
  const format = `${VIEW_FORMAT}|${t.config.baseUrl}`;
  console.log(`lists bench: PostgreSQL ${server.replace(/\/\/[^@]*@/, '//')}, sizes ${sizes.join(', ')}, ${n} requests a value`);
  for (const size of sizes) {
    const started = performance.now();
    // In steps of 200 000 rows: one statement each, so no transaction grows without bound.
    for (let from = seeded + 1; from <= size; from += 200_000) await seedLists(seed, m.entityId, from, Math.min(size, from + 199_999), format);
    await seedLists(seed, other.entityId, Math.floor(seeded / 10) + 1, Math.floor(size / 10), format);
    seeded = size;
    await seed.exec('VACUUM ANALYZE');
    console.log(`\n${size} payments for the entity (seeded and analyzed in ${((performance.now() - started) / 1000).toFixed(1)} s)`);
    console.log(`${'list'.padEnd(20)} ${'filter'.padEnd(22)} ${'value'.padEnd(7)} ${'rows'.padStart(4)} ${'p50 ms'.padStart(8)} ${'p90 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'db ms'.padStart(7)}`);
    const cases: Array<[string, string, string, string, (() => Promise<number>) | undefined]> = [['/v2/payments', '(none)', '-', '', undefined]];
    for (const c of LIST_FILTERS) {
      for (const kind of ['common', 'rare', 'absent'] as const) {
        cases.push([c.path, c.param, kind, `${c.param}=${encodeURIComponent(c[kind])}`, () => dbMs(m.entityId, c, c[kind])]);
      }
    }
    // What the dashboard's search sends beyond one filter (payments-query.ts): a created
    // range (its From and To days), and filters together; through the app only.
    for (const c of COMBINED) {
      for (const kind of ['common', 'rare', 'absent'] as const) cases.push(['/v2/payments', c.name, kind, c[kind], undefined]);
    }
    for (const [path, param, kind, query, db] of cases) {
      const url = `${path.replace('{id}', m.entityId)}?limit=20${query ? `&${query}` : ''}`;
      const headers = path.startsWith('/admin/') ? t.adminHeaders : { ...m.auth, 'cache-control': 'no-cache' };
      const times: number[] = [];
      let rows = 0;
      for (let i = 0; i < n + 5; i++) {
        const t0 = performance.now();
        const res = await t.app.inject({ url, headers });
        const ms = performance.now() - t0;
        if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
        if (i >= 5) times.push(ms);
        rows = (res.json() as { data: unknown[] }).data.length;
      }
      times.sort((a, b) => a - b);
      const p50 = quantile(times, 0.5);
      const p99 = quantile(times, 0.99);
      worst = Math.max(worst, p99);
      const line = `${path.replace('/entities/{id}', '').padEnd(20)} ${param.padEnd(22)} ${kind.padEnd(7)} ${String(rows).padStart(4)} ${p50.toFixed(2).padStart(8)} ${quantile(times, 0.9).toFixed(2).padStart(8)} ${p99.toFixed(2).padStart(8)} ${db ? (await db()).toFixed(2).padStart(7) : '-'.padStart(7)}${p99 > limitMs ? `  OVER ${limitMs} ms` : ''}`;
      console.log(line);
    }
  }
  await seeder.end();
  console.log(`\nworst p99: ${worst.toFixed(2)} ms (${worst > limitMs ? 'over' : 'within'} ${limitMs} ms)`);
} finally {
  await t.close();
}
