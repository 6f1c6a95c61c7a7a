// CPU per request of single payd routes, to compare two builds: each directory given (a
// checkout with its own `npm run build`; default: this one) starts its `payd start`
// (defaults, its log level info unless BENCH_LOG_LEVEL) on a fresh PostgreSQL database, and autocannon loads one
// route at a time (50 connections, after 2 s of warm-up) while /proc gives the CPU time
// the process spent (payd, its merchant and the payment body as throughput.ts starts
// them). Builds alternate, BENCH_ROUNDS times, so that the machine's drift falls on both.
// GET /healthz is each build's floor (HTTP and hooks, no database).
//
//   node --import tsx bench/route-cpu.ts /path/to/old-checkout .
//
// Env: BENCH_SECONDS (10), BENCH_ROUNDS (3), BENCH_ONLY (comma-separated parts of route
// names), BENCH_PG (postgres://postgres@127.0.0.1:5432).
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
// @ts-expect-error autocannon ships no type declarations
import autocannon from 'autocannon';
import { cpuTotalMs } from './proc.ts';
import { call, onboard, paymentBody, startPayd } from './throughput.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const only = process.env.BENCH_ONLY?.split(',');
const pgRoot = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';

interface Result { rps: number; cpuUs: number }

async function measure(dir: string): Promise<Map<string, Result>> {
  const db = `payd_route_cpu_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: `${pgRoot}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${db}`);
  const out = new Map<string, Result>();
  try {
    const payd = await startPayd(`${pgRoot}/${db}`, {}, dir);
    try {
      const base = payd.base;
      const pid = payd.child.pid!;
      const { auth } = await onboard(base);
      const body = paymentBody(1000);
      const existing = await call(base, 'POST', '/v2/payments', auth, body);
      const routes: Array<[string, Record<string, unknown>]> = [
        ['GET /healthz (floor)', { url: `${base}/healthz` }],
        ['GET a payment of another (404)', { url: `${base}/v2/payments/${randomUUID()}`, headers: auth }],
        ['GET a payment', { url: `${base}/v2/payments/${existing.id as string}`, headers: auth }],
        ['POST a payment, invalid (400)', { url: `${base}/v2/payments`, method: 'POST', headers: auth, body: JSON.stringify({ amount: -1, currency: 'EUR', split: [] }) }],
        ['POST a payment', { url: `${base}/v2/payments`, method: 'POST', headers: auth, body }],
      ];
      for (const [name, opts] of routes) {
        if (only && !only.some((o) => name.includes(o))) continue;
        await autocannon({ ...opts, connections: 50, duration: 2 });
        const before = cpuTotalMs(pid);
        const r = (await autocannon({ ...opts, connections: 50, duration: seconds })) as { requests: { average: number } };
        out.set(name, { rps: r.requests.average, cpuUs: ((cpuTotalMs(pid) - before) * 1000) / (r.requests.average * seconds) });
      }
    } finally {
      await payd.stop();
    }
  } finally {
    await admin.query(`DROP DATABASE ${db} WITH (FORCE)`);
    await admin.end();
  }
  return out;
}

const dirs = (process.argv.slice(2).length ? process.argv.slice(2) : ['.']).map((d) => path.resolve(d));
const all = new Map<string, Map<string, Result[]>>(dirs.map((d) => [d, new Map()]));
for (let round = 1; round <= rounds; round++) {
  for (const dir of dirs) {
    for (const [name, r] of await measure(dir)) {
      const list = all.get(dir)!.get(name) ?? [];
      list.push(r);
      all.get(dir)!.set(name, list);
      console.log(`round ${round}  ${dir}  ${name.padEnd(32)} ${r.rps.toFixed(0).padStart(6)} req/s  CPU ${r.cpuUs.toFixed(0).padStart(5)} µs/request`);
    }
  }
}
console.log('\nCPU µs per request, each round (median):');
for (const [dir, routes] of all) {
  for (const [name, list] of routes) {
    const us = list.map((r) => r.cpuUs);
    const median = [...us].sort((a, b) => a - b)[Math.floor(us.length / 2)]!;
    console.log(`${path.basename(dir).padEnd(12)} ${name.padEnd(32)} ${us.map((u) => u.toFixed(0)).join(' / ')}  (median ${median.toFixed(0)})`);
  }
}
