// CPU per request of single payd routes, to compare two builds: each directory given (a
// checkout with its own `npm run build`; default: this one) starts its `payd start`
// (defaults, LOG_LEVEL=silent) on a fresh PostgreSQL database, and autocannon loads one
// route at a time (50 connections, after 2 s of warm-up) while /proc gives the CPU time
// the process spent. Builds alternate, BENCH_ROUNDS times, so that the machine's drift
// falls on both. GET /healthz is each build's floor (HTTP and hooks, no database).
//
//   node --import tsx bench/route-cpu.ts /path/to/old-checkout .
//
// Env: BENCH_SECONDS (10), BENCH_ROUNDS (3), BENCH_ONLY (comma-separated parts of route
// names), BENCH_PG (postgres://postgres@127.0.0.1:5432).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
// @ts-expect-error autocannon ships no type declarations
import autocannon from 'autocannon';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const only = process.env.BENCH_ONLY?.split(',');
const pgRoot = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';
const ADMIN = 'bench-admin-token-0123456789';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, clock ticks of 10 ms
}

interface Result { rps: number; cpuUs: number }

async function measure(dir: string): Promise<Map<string, Result>> {
  const db = `payd_route_cpu_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: `${pgRoot}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${db}`);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['bin/payd.js', 'start'], {
    cwd: dir, stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env, DATABASE_URL: `${pgRoot}/${db}`, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'silent', PAYD_ADMIN_TOKEN: ADMIN,
      PAYD_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'payd-route-cpu-')), PAYD_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
    },
  });
  const out = new Map<string, Result>();
  try {
    for (let i = 0; !(await fetch(`${base}/readyz`).then((r) => r.ok, () => false)); i++) {
      if (i > 600) throw new Error(`payd in ${dir} did not start`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const call = async (method: string, p: string, headers: Record<string, string>, body?: string) => {
      const res = await fetch(base + p, { method, headers, ...(body ? { body } : {}) });
      if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<Record<string, string>>;
    };
    const adminH = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
    const entity = await call('POST', '/admin/v1/entities', adminH, JSON.stringify({ name: 'Route CPU' }));
    const key = await call('POST', `/admin/v1/entities/${entity.id}/api-keys`, adminH, '{}');
    const token = (await call('POST', '/oauth/token', { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': key.api_key! }, 'grant_type=client_credentials')).access_token;
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
    const body = JSON.stringify({ amount: 1000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card }] });
    const existing = await call('POST', '/v2/payments', auth, body);
    const routes: Array<[string, Record<string, unknown>]> = [
      ['GET /healthz (floor)', { url: `${base}/healthz` }],
      ['GET a payment of another (404)', { url: `${base}/v2/payments/${randomUUID()}`, headers: auth }],
      ['GET a payment', { url: `${base}/v2/payments/${existing.id}`, headers: auth }],
      ['POST a payment, invalid (400)', { url: `${base}/v2/payments`, method: 'POST', headers: auth, body: JSON.stringify({ amount: -1, currency: 'EUR', split: [] }) }],
      ['POST a payment', { url: `${base}/v2/payments`, method: 'POST', headers: auth, body }],
    ];
    for (const [name, opts] of routes) {
      if (only && !only.some((o) => name.includes(o))) continue;
      await autocannon({ ...opts, connections: 50, duration: 2 });
      const before = cpuMs(child.pid!);
      const r = (await autocannon({ ...opts, connections: 50, duration: seconds })) as { requests: { average: number } };
      out.set(name, { rps: r.requests.average, cpuUs: ((cpuMs(child.pid!) - before) * 1000) / (r.requests.average * seconds) });
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
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
