// A soak run (issue 45): `payd start` with its defaults on a fresh PostgreSQL database,
// loaded at a fixed rate of mixed flows for SOAK_MINUTES, reporting each minute what
// would show a slow leak or a cost that grows with history: the flows served, p50/p99,
// non-2xx, payd's RSS and open file descriptors, its CPU per pair, the pool's waiting
// count (scraped from /metrics every second: mean and max), and the WAL bytes written per
// pair. Flat is the target.
//
// Before the soak, one minute each of the plain pair (create a MANUAL card payment, then
// capture it) at the same fixed rate on the same-work baseline (bench/baselines.ts: one
// statement per request) and on payd, so that payd's p99 and WAL bytes per pair at a
// fixed load are read beside the floor's (issue 44).
//
// A flow of the soak: create, capture the full amount, then one of three in turn: read
// the payment, refund 100 of it, read the first page of the merchant's list. Every
// creating request carries a fresh x-idempotency-key, as the SDK sends.
//
// Env: SOAK_MINUTES (30), SOAK_RATE (pairs per second, 200), SOAK_CONNECTIONS (50),
// SOAK_PG (postgres://postgres@127.0.0.1:5432), SOAK_BASELINE (1: the fixed-rate minutes
// first; 0 skips them). Needs a quiet machine and `npm run build` (payd runs from dist/).
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import pg from 'pg';
// @ts-expect-error autocannon ships no type declarations
import autocannon from 'autocannon';
import { cpuMs, rssMb } from './proc.ts';
import { call, keyed, onboard, paymentBody, startPayd } from './throughput.ts';

const minutes = Number(process.env.SOAK_MINUTES ?? 30);
const pairRate = Number(process.env.SOAK_RATE ?? 200);
const connections = Number(process.env.SOAK_CONNECTIONS ?? 50);
const pgRoot = process.env.SOAK_PG ?? 'postgres://postgres@127.0.0.1:5432';

interface Minute { requests: number; p50: number; p99: number; bad: number; statuses: string }

/** autocannon for `seconds` at `rate` requests per second overall. */
function run(url: string, opts: Record<string, unknown>, rate: number, seconds: number): Promise<Minute> {
  return autocannon({ url, connections, duration: seconds, overallRate: rate, ...opts }).then((r: {
    requests: { total: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number; timeouts: number; statusCodeStats: Record<string, { count: number }>;
  }) => ({
    requests: r.requests.total, p50: r.latency.p50, p99: r.latency.p99, bad: r.non2xx + r.errors + r.timeouts,
    statuses: r.non2xx + r.errors + r.timeouts === 0 ? '' : ` statuses ${JSON.stringify(Object.fromEntries(Object.entries(r.statusCodeStats).map(([k, v]) => [k, v.count])))} errors ${r.errors} timeouts ${r.timeouts}`,
  }));
}

const walLsn = async (admin: pg.Client): Promise<string> => (await admin.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l;
const walBytes = async (admin: pg.Client, from: string): Promise<number> =>
  Number((await admin.query<{ b: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::text AS b', [from])).rows[0]!.b);
const openFiles = (pid: number | undefined): number => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
};

/** The pool's waiting count, scraped from payd's /metrics every second while `during` runs. */
async function poolWaits<T>(base: string, during: () => Promise<T>): Promise<{ result: T; mean: number; max: number }> {
  const seen: number[] = [];
  let busy = true;
  const loop = (async () => {
    while (busy) {
      const text = await fetch(`${base}/metrics`).then((r) => r.text(), () => '');
      const m = /^payd_db_pool_waiting (\S+)$/m.exec(text);
      if (m) seen.push(Number(m[1]));
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  const result = await during();
  busy = false;
  await loop;
  return { result, mean: seen.length ? seen.reduce((a, b) => a + b, 0) / seen.length : Number.NaN, max: seen.length ? Math.max(...seen) : Number.NaN };
}

async function main(): Promise<void> {
  const dbName = `payd_soak_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: `${pgRoot}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const dbUrl = `${pgRoot}/${dbName}`;
  const stops: Array<() => Promise<void>> = [];
  try {
    const payd = await startPayd(dbUrl);
    stops.push(payd.stop);
    const { entityId, auth } = await onboard(payd.base);
    const json = { 'content-type': 'application/json' };
    const pairOf = (create: string, capture: (id: string) => string, headers: Record<string, string>, body: string) => ({
      requests: [
        { method: 'POST', path: create, headers, body, setupRequest: (req: Record<string, unknown>) => keyed(req),
          onResponse: (_s: number, b: string, ctx: Record<string, unknown>) => { ctx.id = /"id":"([^"]+)"/.exec(b)?.[1]; } },
        { method: 'POST', headers, body: JSON.stringify({ amount: 1000 }),
          setupRequest: (req: Record<string, unknown>, ctx: Record<string, unknown>) => keyed({ ...req, path: capture(String(ctx.id)) }) },
      ],
    });
    console.log(`payd soak: \`payd start\` (defaults) on PostgreSQL (${dbName}, dropped after), ${pairRate} pairs/s fixed, ${connections} connections, ${new Date().toISOString()}`);
    console.log(`machine: ${(await import('node:os')).cpus().length} cores, load ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);

    if (process.env.SOAK_BASELINE !== '0') {
      const base = spawn(process.execPath, ['--import', 'tsx', 'bench/baselines.ts'], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DATABASE_URL: dbUrl } });
      stops.push(async () => { base.kill('SIGTERM'); });
      const line = await new Promise<string>((resolve) => createInterface({ input: base.stdout }).on('line', (l) => { if (l.startsWith('{')) resolve(l); }));
      const baseUrl = `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}`;
      const sample = await call(payd.base, 'POST', '/v2/payments', auth, paymentBody(1000));
      await call(baseUrl, 'POST', '/template', json, JSON.stringify(sample));
      const fixed = async (name: string, url: string, opts: Record<string, unknown>, pid: number | undefined) => {
        await run(url, opts, 2 * pairRate, 10); // warm-up, unmeasured
        const lsn = await walLsn(admin);
        const cpu0 = cpuMs(pid);
        const m = await run(url, opts, 2 * pairRate, 60);
        const cpu1 = cpuMs(pid);
        const wal = await walBytes(admin, lsn);
        const pairs = m.requests / 2;
        console.log(`fixed ${pairRate} pairs/s, 60 s, ${name.padEnd(26)} ${(pairs / 60).toFixed(0)} pairs/s  p50 ${m.p50} ms  p99 ${m.p99} ms  non-2xx ${m.bad}` +
          `  WAL ${(wal / pairs).toFixed(0)} B/pair  CPU ${((cpu1.user + cpu1.sys - cpu0.user - cpu0.sys) * 1000 / pairs).toFixed(0)} µs/pair${m.statuses}`);
      };
      await fixed('same-work baseline', baseUrl, pairOf('/create', (id) => `/capture/${id}`, json, JSON.stringify({ amount: 1000, entity_id: entityId })), base.pid);
      await fixed('payd', payd.base, pairOf('/v2/payments', (id) => `/v2/payments/${id}/captures`, auth, paymentBody(1000)), payd.child.pid);
      base.kill('SIGTERM');
      console.log('');
    }

    let turn = 0;
    type Req = Record<string, unknown>;
    const third = [
      (req: Req, id: string) => ({ ...req, method: 'GET', path: `/v2/payments/${id}`, body: undefined }),
      (req: Req, id: string) => keyed({ ...req, method: 'POST', path: `/v2/payments/${id}/refunds`, body: JSON.stringify({ amount: 100 }) }),
      (req: Req) => ({ ...req, method: 'GET', path: '/v2/payments?limit=10', body: undefined }),
    ];
    const flow = {
      requests: [
        ...pairOf('/v2/payments', (id) => `/v2/payments/${id}/captures`, auth, paymentBody(1000)).requests,
        { headers: auth, setupRequest: (req: Req, ctx: Req) => third[turn++ % 3]!(req, String(ctx.id)) },
      ],
    };
    console.log('minute  pairs/s  p50 ms  p99 ms  non-2xx  RSS MB  fds  CPU µs/pair  pool waiting (mean/max)  WAL B/pair  database MB');
    const perMinute: Array<{ pairs: number; p99: number; rss: number }> = [];
    for (let i = 1; i <= minutes; i++) {
      const lsn = await walLsn(admin);
      const cpu0 = cpuMs(payd.child.pid);
      const { result: m, mean, max } = await poolWaits(payd.base, () => run(payd.base, flow, 3 * pairRate, 60));
      const cpu1 = cpuMs(payd.child.pid);
      const wal = await walBytes(admin, lsn);
      const size = Number((await admin.query<{ s: string }>('SELECT pg_database_size($1)::text AS s', [dbName])).rows[0]!.s) / 1e6;
      const pairs = m.requests / 3;
      const rss = rssMb(payd.child.pid);
      perMinute.push({ pairs: pairs / 60, p99: m.p99, rss });
      console.log(`${String(i).padStart(6)}  ${(pairs / 60).toFixed(0).padStart(7)}  ${String(m.p50).padStart(6)}  ${String(m.p99).padStart(6)}  ${String(m.bad).padStart(7)}` +
        `  ${rss.toFixed(0).padStart(6)}  ${String(openFiles(payd.child.pid)).padStart(3)}  ${((cpu1.user + cpu1.sys - cpu0.user - cpu0.sys) * 1000 / pairs).toFixed(0).padStart(11)}` +
        `  ${`${mean.toFixed(2)}/${max}`.padStart(23)}  ${(wal / pairs).toFixed(0).padStart(10)}  ${size.toFixed(0).padStart(11)}${m.statuses}`);
    }
    if (perMinute.length >= 4) {
      const head = perMinute.slice(0, 2);
      const tail = perMinute.slice(-2);
      const avg = (xs: typeof perMinute, f: (x: (typeof perMinute)[number]) => number) => xs.reduce((s, x) => s + f(x), 0) / xs.length;
      console.log(`\nfirst two minutes against last two: pairs/s ${avg(head, (x) => x.pairs).toFixed(0)} → ${avg(tail, (x) => x.pairs).toFixed(0)}, ` +
        `p99 ${avg(head, (x) => x.p99).toFixed(0)} → ${avg(tail, (x) => x.p99).toFixed(0)} ms, RSS ${avg(head, (x) => x.rss).toFixed(0)} → ${avg(tail, (x) => x.rss).toFixed(0)} MB`);
    }
  } finally {
    for (const s of stops.reverse()) await s().catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((err: unknown) => console.error(`could not drop ${dbName}: ${String(err)}`));
    await admin.end();
  }
}

await main();
