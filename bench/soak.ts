// A soak run (issue 45): `payd start` with its defaults on a fresh PostgreSQL database,
// loaded at a fixed rate of mixed flows for SOAK_MINUTES, reporting each minute what
// would show a slow leak or a cost that grows with history: the flows served, p50/p99,
// non-2xx, payd's RSS and open file descriptors, its CPU per flow, the pool's waiting
// count (scraped from /metrics every second: mean and max), and the WAL bytes written per
// flow. Flat is the target.
//
// The load is bench/paced.ts's open loop: a flow starts every 1/rate seconds whatever the
// answers, over at most SOAK_CONNECTIONS keep-alive sockets, and each request is timed from
// its sending, so the p99 is a steady load's (autocannon's fixed rate sends each second's
// quota in a burst and measured its own queue).
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
// Env: SOAK_MINUTES (30), SOAK_RATE (flows per second, 200), SOAK_CONNECTIONS (50),
// SOAK_PG (postgres://postgres@127.0.0.1:5432), SOAK_BASELINE (1: the fixed-rate minutes
// first; 0 skips them). Needs a quiet machine and `npm run build` (payd runs from dist/).
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { type PacedRequest, type PacedResult, paced } from './paced.ts';
import { cpuMs, rssMb } from './proc.ts';
import { baselinePairOf, call, onboard, pacedFlow, paydPairOf, paymentBody, startPayd } from './throughput.ts';

const minutes = Number(process.env.SOAK_MINUTES ?? 30);
const flowRate = Number(process.env.SOAK_RATE ?? 200);
const connections = Number(process.env.SOAK_CONNECTIONS ?? 50);
const pgRoot = process.env.SOAK_PG ?? 'postgres://postgres@127.0.0.1:5432';

/** The open-loop load for `seconds` at `rate` flows per second. */
const run = (url: string, flow: PacedRequest[] | ((i: number) => PacedRequest[]), seconds: number): Promise<PacedResult> =>
  paced(url, flow, { rate: flowRate, seconds, connections });

/** What went wrong in a stretch, if anything: the statuses of the answers that were not 2xx, and the flows the client started late. */
const troubles = (m: PacedResult): string =>
  (m.bad ? ` statuses ${JSON.stringify(m.statuses)}` : '') + (m.late ? ` (${m.late} flows started late by the client)` : '');
const ms = (v: number) => v.toFixed(1);

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
    console.log(`payd soak: \`payd start\` (defaults) on PostgreSQL (${dbName}, dropped after), ${flowRate} flows/s, open loop, at most ${connections} connections, ${new Date().toISOString()}`);
    console.log(`machine: ${(await import('node:os')).cpus().length} cores, load ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);

    if (process.env.SOAK_BASELINE !== '0') {
      const base = spawn(process.execPath, ['--import', 'tsx', 'bench/baselines.ts'], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DATABASE_URL: dbUrl } });
      stops.push(async () => { base.kill('SIGTERM'); });
      const line = await new Promise<string>((resolve) => createInterface({ input: base.stdout }).on('line', (l) => { if (l.startsWith('{')) resolve(l); }));
      const baseUrl = `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}`;
      const sample = await call(payd.base, 'POST', '/v2/payments', auth, paymentBody(1000));
      await call(baseUrl, 'POST', '/template', json, JSON.stringify(sample));
      const fixed = async (name: string, url: string, flow: PacedRequest[], pid: number | undefined) => {
        await run(url, flow, 10); // warm-up, unmeasured
        const lsn = await walLsn(admin);
        const cpu0 = cpuMs(pid);
        const m = await run(url, flow, 60);
        const cpu1 = cpuMs(pid);
        const wal = await walBytes(admin, lsn);
        const pairs = m.requests / 2;
        console.log(`fixed ${flowRate} pairs/s, 60 s, ${name.padEnd(26)} ${(m.completed / 60).toFixed(0)} pairs/s  p50 ${ms(m.p50)} ms  p99 ${ms(m.p99)} ms  non-2xx ${m.bad}` +
          `  WAL ${(wal / pairs).toFixed(0)} B/pair  CPU ${((cpu1.user + cpu1.sys - cpu0.user - cpu0.sys) * 1000 / pairs).toFixed(0)} µs/pair${troubles(m)}`);
      };
      await fixed('same-work baseline', baseUrl, pacedFlow(baselinePairOf(entityId)), base.pid);
      await fixed('payd', payd.base, pacedFlow(paydPairOf(auth)), payd.child.pid);
      base.kill('SIGTERM');
      console.log('');
    }

    const idOf = (earlier: unknown[]) => (earlier[0] as { id: string }).id;
    const third: PacedRequest[] = [
      { method: 'GET', path: (e) => `/v2/payments/${idOf(e)}`, headers: auth },
      { method: 'POST', path: (e) => `/v2/payments/${idOf(e)}/refunds`, headers: auth, body: JSON.stringify({ amount: 100 }), keyed: 'x-idempotency-key' },
      { method: 'GET', path: () => '/v2/payments?limit=10', headers: auth },
    ];
    const pair = pacedFlow(paydPairOf(auth));
    const flow = (i: number): PacedRequest[] => [...pair, third[i % 3]!];
    console.log('minute  flows/s  p50 ms  p99 ms  non-2xx  RSS MB  fds  CPU µs/flow  pool waiting (mean/max)  WAL B/flow  database MB');
    const perMinute: Array<{ flows: number; p99: number; rss: number }> = [];
    for (let i = 1; i <= minutes; i++) {
      const lsn = await walLsn(admin);
      const cpu0 = cpuMs(payd.child.pid);
      const { result: m, mean, max } = await poolWaits(payd.base, () => run(payd.base, flow, 60));
      const cpu1 = cpuMs(payd.child.pid);
      const wal = await walBytes(admin, lsn);
      const size = Number((await admin.query<{ s: string }>('SELECT pg_database_size($1)::text AS s', [dbName])).rows[0]!.s) / 1e6;
      const flows = m.requests / 3;
      const rss = rssMb(payd.child.pid);
      perMinute.push({ flows: m.completed / 60, p99: m.p99, rss });
      console.log(`${String(i).padStart(6)}  ${(m.completed / 60).toFixed(0).padStart(7)}  ${ms(m.p50).padStart(6)}  ${ms(m.p99).padStart(6)}  ${String(m.bad).padStart(7)}` +
        `  ${rss.toFixed(0).padStart(6)}  ${String(openFiles(payd.child.pid)).padStart(3)}  ${((cpu1.user + cpu1.sys - cpu0.user - cpu0.sys) * 1000 / flows).toFixed(0).padStart(11)}` +
        `  ${`${mean.toFixed(2)}/${max}`.padStart(23)}  ${(wal / flows).toFixed(0).padStart(10)}  ${size.toFixed(0).padStart(11)}${troubles(m)}`);
    }
    if (perMinute.length >= 4) {
      const head = perMinute.slice(0, 2);
      const tail = perMinute.slice(-2);
      const avg = (xs: typeof perMinute, f: (x: (typeof perMinute)[number]) => number) => xs.reduce((s, x) => s + f(x), 0) / xs.length;
      console.log(`\nfirst two minutes against last two: flows/s ${avg(head, (x) => x.flows).toFixed(0)} → ${avg(tail, (x) => x.flows).toFixed(0)}, ` +
        `p99 ${avg(head, (x) => x.p99).toFixed(0)} → ${avg(tail, (x) => x.p99).toFixed(0)} ms, RSS ${avg(head, (x) => x.rss).toFixed(0)} → ${avg(tail, (x) => x.rss).toFixed(0)} MB`);
    }
  } finally {
    for (const s of stops.reverse()) await s().catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((err: unknown) => console.error(`could not drop ${dbName}: ${String(err)}`));
    await admin.end();
  }
}

await main();
