// npm run bench: starts bench/server.ts in its own process and loads it with autocannon,
// each scenario beside its baseline in the same run. Prints requests/s, p50/p99 and the
// ratio to the baseline, and the server's peak RSS. Then the start-up bench (bench/startup.ts).
// Env: BENCH_SECONDS (default 10), BENCH_CONNECTIONS (default 50), DATABASE_URL (else PGlite),
// BENCH_ONLY (comma-separated parts of scenario names, or =name for one exactly; baselines always run).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
// @ts-expect-error autocannon ships no type declarations
import autocannon from 'autocannon';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

// BENCH_NODE_ARGS: extra node flags for the server (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
const server = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'bench/server.ts'], { stdio: ['ignore', 'pipe', 'inherit'], env: process.env });
const info = await new Promise<{ port: number; apiKey: string; seedId: string; idpClient: { id: string; secret: string } }>((resolve, reject) => {
  server.once('exit', (code) => reject(new Error(`bench server exited (${code})`)));
  createInterface({ input: server.stdout! }).once('line', (line) => resolve(JSON.parse(line)));
});
const base = `http://127.0.0.1:${info.port}`;

let peakRss = 0;
const rssTimer = setInterval(() => {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))?.[1] ?? 0);
    peakRss = Math.max(peakRss, kb / 1024);
  } catch { /* not on Linux */ }
}, 200);

/** CPU time (user + system) the server process has used, in ms (Linux /proc). */
function serverCpuMs(): number {
  try {
    const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in ticks of 1/100 s
  } catch {
    return NaN;
  }
}

/** CPU time (user + system, ms) of every PostgreSQL process on the machine (Linux /proc). */
function postgresCpuMs(): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const fields = stat.split(') ')[1]!.split(' ');
      total += ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    } catch { /* exited */ }
  }
  return total;
}

async function json(method: string, path: string, headers: Record<string, string>, body?: string) {
  const res = await fetch(base + path, { method, headers, ...(body ? { body } : {}) });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<Record<string, unknown>>;
}

const form = { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': info.apiKey };
const token = (await json('POST', '/oauth/token', form, 'grant_type=client_credentials')).access_token as string;
const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
const paymentBody = (amount: number) => JSON.stringify({
  amount, currency: 'EUR', capture_mode: 'MANUAL', order: { reference: 'bench' },
  split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' } }],
});
// Payments to capture from: many, so that captures do not queue on one row lock and each
// payment gets a few captures during the run, as real payments do (200 payments captured
// round-robin grew ledgers of 20-40 captures each, and every capture returns the whole
// payment). Created 50 at a time.
const CAPTURE_TARGETS = Number(process.env.BENCH_CAPTURE_TARGETS ?? 2000);
async function inParallel<T>(n: number, make: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += 50) out.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, (_, j) => make(i + j)))));
  return out;
}
const payments = await inParallel(CAPTURE_TARGETS, async () => (await json('POST', '/v2/payments', auth, paymentBody(5_000_000))).id as string);
let next = 0;
// Payments to read: authorized and captured once (a typical payment), kept apart from the
// ones the capture scenario keeps capturing (their ledgers grow during the run).
const toRead = await inParallel(200, async () => {
  const id = (await json('POST', '/v2/payments', auth, paymentBody(5_000))).id as string;
  await json('POST', `/v2/payments/${id}/captures`, auth, JSON.stringify({ amount: 5_000 }));
  return id;
});
let nextRead = 0;
const basic = { authorization: `Basic ${Buffer.from(`${info.idpClient.id}:${info.idpClient.secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' };
let codes: string[] = [];
let nextCode = 0;

interface Req { path?: string; [k: string]: unknown }
interface Scenario {
  name: string;
  baseline?: string;
  opts: { method: string; path?: string; headers?: Record<string, string>; body?: string; requests?: Array<{ setupRequest: (req: Req) => Req }> };
}

const scenarios: Scenario[] = [
  { name: 'hello (baseline)', opts: { method: 'GET', path: '/bench/hello' } },
  { name: 'POST hello, form body (info)', baseline: 'hello (baseline)', opts: { method: 'POST', path: '/bench/hello', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials' } },
  { name: 'POST /oauth/token', baseline: 'hello (baseline)', opts: { method: 'POST', path: '/oauth/token', headers: form, body: 'grant_type=client_credentials' } },
  {
    name: 'POST /oauth/token (authorization_code)', baseline: 'hello (baseline)',
    opts: {
      method: 'POST', path: '/oauth/token', headers: basic,
      requests: [{ setupRequest: (req: Req) => ({ ...req, body: `grant_type=authorization_code&redirect_uri=${encodeURIComponent('https://bench.example/cb')}&code=${codes[nextCode++ % codes.length]}` }) }],
    },
  },
  { name: 'POST /oauth/token (management client credentials)', baseline: 'hello (baseline)', opts: { method: 'POST', path: '/oauth/token', headers: basic, body: 'grant_type=client_credentials' } },
  { name: 'one INSERT (baseline)', opts: { method: 'POST', path: '/bench/insert' } },
  { name: 'POST /v2/payments', baseline: 'one INSERT (baseline)', opts: { method: 'POST', path: '/v2/payments', headers: auth, body: paymentBody(1000) } },
  {
    name: 'POST /v2/payments/{id}/captures', baseline: 'one INSERT (baseline)',
    opts: {
      method: 'POST', headers: auth, body: JSON.stringify({ amount: 1 }),
      requests: [{ setupRequest: (req: Req) => ({ ...req, path: `/v2/payments/${payments[next++ % payments.length]}/captures` }) }],
    },
  },
  { name: 'one SELECT (baseline)', opts: { method: 'GET', path: `/bench/select/${info.seedId}` } },
  {
    name: 'GET /v2/payments/{id} max-age', baseline: 'one SELECT (baseline)',
    opts: {
      method: 'GET', headers: { ...auth, 'cache-control': 'max-age=60' },
      requests: [{ setupRequest: (req: Req) => ({ ...req, path: `/v2/payments/${toRead[nextRead++ % toRead.length]}` }) }],
    },
  },
];

const only = process.env.BENCH_ONLY?.split(',');
const results = new Map<string, { rps: number; p50: number; p99: number; bad: number; cpuUs: number; pgUs: number }>();
console.log(`payd bench: ${seconds}s per scenario, ${connections} connections, database ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}\n`);
for (const s of scenarios) {
  if (only && !only.some((o) => (o.startsWith('=') ? s.name === o.slice(1) : s.name.includes(o))) && !s.name.includes('baseline')) continue;
  if (s.name.includes('authorization_code')) {
    codes = ((await json('POST', `/bench/mint-codes?n=${Math.ceil(seconds * 3000)}`, {})).codes as string[]);
    nextCode = 0;
  }
  const cpuBefore = serverCpuMs();
  const pgBefore = postgresCpuMs();
  const r = await autocannon({ url: base + (s.opts.path ?? ''), connections, duration: seconds, ...s.opts });
  const cpuUs = ((serverCpuMs() - cpuBefore) * 1000) / Math.max(1, r.requests.total);
  const pgUs = ((postgresCpuMs() - pgBefore) * 1000) / Math.max(1, r.requests.total);
  const row = { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, bad: r.non2xx + r.errors + r.timeouts, cpuUs, pgUs };
  results.set(s.name, row);
  const b = s.baseline ? results.get(s.baseline) : undefined;
  const ratio = b ? ` ratio ${(row.rps / b.rps).toFixed(2)} (by server CPU per request ${(b.cpuUs / row.cpuUs).toFixed(2)})` : '';
  console.log(`${s.name.padEnd(34)} ${row.rps.toFixed(0).padStart(7)} req/s  p50 ${String(row.p50).padStart(4)} ms  p99 ${String(row.p99).padStart(4)} ms  server CPU ${row.cpuUs.toFixed(0).padStart(5)} µs/req  PostgreSQL CPU ${row.pgUs.toFixed(0).padStart(5)} µs/req  non-2xx/errors ${row.bad}${ratio}`);
}
clearInterval(rssTimer);
console.log(`\npeak server RSS: ${peakRss.toFixed(0)} MB`);

const check = (name: string, baseline: string, min: number) => {
  const a = results.get(name);
  const b = results.get(baseline);
  if (a && b && a.rps / b.rps < min) console.log(`BELOW TARGET: ${name} is ${(a.rps / b.rps).toFixed(2)} of ${baseline} (target ${min})`);
};
check('POST /oauth/token', 'hello (baseline)', 0.4);
check('POST /v2/payments', 'one INSERT (baseline)', 0.5);
check('POST /v2/payments/{id}/captures', 'one INSERT (baseline)', 0.5);
check('GET /v2/payments/{id} max-age', 'one SELECT (baseline)', 0.7);
if (peakRss > 200) console.log(`ABOVE TARGET: peak RSS ${peakRss.toFixed(0)} MB (target 200 MB)`);
server.kill('SIGTERM');
await (await import('./startup.ts')).startupBench(); // start-up times and RSS (bench/startup.ts, issue 17)
