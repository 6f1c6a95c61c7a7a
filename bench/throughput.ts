// Throughput of what users run: `payd start` (bin/payd.js, its defaults: role all with the
// workers on, pool 10; its log level info, unless BENCH_LOG_LEVEL) on a fresh PostgreSQL database that this bench
// creates and drops, loaded by autocannon beside baselines in the same run:
//   - bench/baselines.ts, a minimal Fastify process on the same database: hello, and the
//     same-work routes (one statement writing the rows payd writes for the request);
//   - stripe-stateful-mock (in memory, not durable), the sandbox a merchant would pick
//     instead, with the same client doing the pair flow on its Charges API.
// The token endpoint (client credentials) is also loaded beside node-oidc-provider's
// (bench/oidc-provider-peer.ts, a devDependency: HS256 JWTs as payd's, and its default
// opaque tokens), and a verified API call (GET /v2/payments/{id} with a bearer token) with
// its token remembered by the process and with more tokens than it remembers.
// Flows: create only; the pair (create a MANUAL card payment, then capture its full
// amount, a fresh payment each time); capture alone (one cent of one of many payments,
// round-robin: 2 000, which payd's recent-payments cache holds, so no capture reads its
// payment first); capture alone, not remembered (the same over four times as many
// payments as that cache holds, so that each capture reads its payment first, as a
// capture made hours after the authorization, or by another process, does). Then the
// pair with partners called (PAYD_SIM_INLINE=false), without latency and with a slow partner (PAYD_SIM_LATENCY_MS=200) and BENCH_SLOW_CONNECTIONS
// (400) concurrent pair flows, each on its own `payd start`, the two loads alternating.
// Every scenario first runs BENCH_WARMUP seconds unmeasured, on every process alike (payd,
// the baselines, the mock): the figures are of processes whose code the JIT has compiled.
// Each row gives the serving process's CPU per request and, for the processes on the
// database, the CPU its PostgreSQL backends spent per request.
// While each scenario runs, pg_stat_activity is sampled every 100 ms (payd's connections):
// active, idle in transaction, and what they wait on.
//
// Env: BENCH_SECONDS (10), BENCH_CONNECTIONS (50), BENCH_PG (postgres://postgres@127.0.0.1:5432),
// BENCH_ONLY (comma-separated parts of scenario names), BENCH_SLOW (default on; 0 skips it),
// BENCH_WARMUP (3 seconds; 0: none), BENCH_SLOW_ROUNDS (2 stretches of each of the called
// loads, alternating), BENCH_SLOW_CONNECTIONS (400), BENCH_SLOW_LATENCY_MS (200),
// BENCH_NODE_ARGS (extra node flags for payd, e.g. --cpu-prof --cpu-prof-dir=/tmp/prof),
// BENCH_EXPERIMENT_ASYNC_COMMIT=1 (synchronous_commit off on the bench database: shows
// how much of the time is the WAL flush of each commit; not durable, not a setting),
// BENCH_PAYD_DIR (another checkout, built, whose `payd start` is loaded instead of this
// one's: the same scenarios on the build before a change, e.g. a `git archive` of it),
// BENCH_RATE (requests per second, all clients together: a fixed load instead of as
// many as the server takes, to compare the CPU per request of two builds, which moves
// less at a fixed load; the throughput ratios then mean nothing; autocannon's rate comes in
// bursts each second, so its latencies are not those of a steady load: see paced below),
// BENCH_PACED_RATE (200 pairs/s: the open-loop load of bench/paced.ts, run after the other
// scenarios, "paced" in BENCH_ONLY, for the latency at a fixed rate: hello at twice the
// rate, the same-work pair and payd's pair, each request with its key).
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
// @ts-expect-error autocannon ships no type declarations
import autocannon from 'autocannon';
import { RECENT_PAYMENTS_DEFAULT } from '../src/payments/recent-payments.ts';
import { VERIFIED_MAX } from '../src/identity/oauth/access-tokens.ts';
import { type PacedRequest, paced } from './paced.ts';
import { COMPILED_ONLY, cpuMs, cpuTotalMs, freePort, rssMb } from './proc.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const slowConnections = Number(process.env.BENCH_SLOW_CONNECTIONS ?? 400);
const slowLatency = Number(process.env.BENCH_SLOW_LATENCY_MS ?? 200);
const pgRoot = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';
const only = process.env.BENCH_ONLY?.split(',');
const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
const rate = process.env.BENCH_RATE ? { overallRate: Number(process.env.BENCH_RATE) } : {};
const warmupSeconds = Number(process.env.BENCH_WARMUP ?? 3);
const ADMIN_TOKEN = 'bench-admin-token-0123456789';
/** payd's log level in the bench: its default (info) unless BENCH_LOG_LEVEL is set. */
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';
/** The client of the token endpoint's peer (bench/oidc-provider-peer.ts). */
const PEER_CLIENT = { id: 'bench-client', secret: 'bench-client-secret-0123456789-0123456789' };
const adminH = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

/** Starts a process (in `cwd`, else this one) and resolves once a line of its stdout matches. */
function startProcess(args: string[], env: NodeJS.ProcessEnv, ready: (line: string) => boolean, cwd?: string): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env, ...(cwd ? { cwd } : {}) });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code})`)));
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (!ready(line)) return;
      // From now on the output is drained unread, as a log collector would take it.
      lines.close();
      child.stdout!.resume();
      resolve({ child, line });
    });
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** The CPU time (ms) of each server process (backend) connected to the bench database. */
async function backendsCpu(admin: pg.Client, dbName: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [dbName]);
  return new Map(rows.map((r) => [r.pid, cpuTotalMs(r.pid)]));
}

/**
 * Runs a scenario, adding the CPU time its serving process spent per request (or per
 * pair) to its row, and the kernel's share of it (system calls: sockets to the clients
 * and to PostgreSQL). With `db`: also the CPU time PostgreSQL's backends on the bench
 * database spent (only the loaded server's backends work during a scenario; the WAL
 * writer and the checkpointer, shared by the whole server, are not counted).
 */
async function withCpu(pid: number | undefined, run: () => Promise<Row>, db?: { admin: pg.Client; dbName: string }): Promise<Row> {
  const dbBefore = db ? await backendsCpu(db.admin, db.dbName) : undefined;
  const before = cpuMs(pid);
  const row = await run();
  const after = cpuMs(pid);
  const spent = after.user - before.user + after.sys - before.sys;
  if (!(spent > 0 && row.rps > 0)) return row;
  const requests = row.rps * duration;
  let dbCpuUs: number | undefined;
  if (db && dbBefore) {
    let dbSpent = 0;
    for (const [p, ms] of await backendsCpu(db.admin, db.dbName)) dbSpent += ms - (dbBefore.get(p) ?? 0);
    dbCpuUs = (dbSpent * 1000) / requests;
  }
  return { ...row, cpuUs: (spent * 1000) / requests, sysShare: (after.sys - before.sys) / spent, ...(dbCpuUs === undefined ? {} : { dbCpuUs }) };
}

/** Resolves once the process spends under a tenth of a core (sampled every 250 ms), or after 20 s. */
async function quiet(pid: number | undefined): Promise<void> {
  for (let i = 0; i < 80; i++) {
    const before = cpuTotalMs(pid);
    await new Promise((r) => setTimeout(r, 250));
    if (cpuTotalMs(pid) - before < 25) return;
  }
}

/**
 * The request-rate limits raised out of reach (docs/operations.md, Rate limits): the bench
 * floods one credential from one address (7,000-9,500 tokens a second), which the default
 * limits exist to refuse. The limiter still runs on every request, so its cost is measured.
 */
export const LIMITS_OUT_OF_REACH = {
  PAYD_RATE_LIMIT_TOKEN_PER_KEY: '1000000000', PAYD_RATE_LIMIT_TOKEN_PER_ADDRESS: '1000000000', PAYD_RATE_LIMIT_API_PER_KEY: '1000000000',
} as const;

/**
 * `payd start` (bin/payd.js of `cwd`, else of this checkout) with its defaults (but
 * LIMITS_OUT_OF_REACH) on dbUrl; its log level is payd's default (info: a line per request
 * served) unless BENCH_LOG_LEVEL says otherwise.
 */
export async function startPayd(dbUrl: string, extraEnv: Record<string, string> = {}, cwd?: string) {
  const port = await freePort();
  const env = {
    ...process.env, DATABASE_URL: dbUrl, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: LOG_LEVEL,
    PAYD_ADMIN_TOKEN: ADMIN_TOKEN, PAYD_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'payd-bench-')),
    PAYD_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'), ...COMPILED_ONLY, ...LIMITS_OUT_OF_REACH, ...extraEnv,
  };
  const { child } = await startProcess([...nodeArgs, 'bin/payd.js', 'start'], env, (l) => l.includes('listening on'), cwd);
  let peak = 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMb(child.pid) || 0);
  }, 200);
  return { child, base: `http://127.0.0.1:${port}`, peakRss: () => peak, stop: async () => { clearInterval(timer); await stop(child); } };
}

export async function call(base: string, method: string, p: string, headers: Record<string, string>, body?: string) {
  const res = await fetch(base + p, { method, headers, ...(body ? { body } : {}) });
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<Record<string, unknown>>;
}

async function inParallel<T>(n: number, make: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += 50) out.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, (_, j) => make(i + j)))));
  return out;
}

/** Samples payd's connections in pg_stat_activity while `run` runs. */
async function sampled<T>(admin: pg.Client, dbName: string, run: () => Promise<T>): Promise<{ result: T; activity: string }> {
  let samples = 0;
  const counts = new Map<string, number>();
  let busy = true;
  const loop = (async () => {
    while (busy) {
      const { rows } = await admin.query<{ k: string; n: number }>(
        `SELECT coalesce(state, '?') || coalesce(' ' || wait_event_type || ':' || wait_event, '') AS k, count(*)::int AS n
           FROM pg_stat_activity WHERE datname = $1 AND application_name = 'payd' AND pid <> pg_backend_pid() GROUP BY 1`, [dbName]);
      samples += 1;
      for (const r of rows) counts.set(r.k, (counts.get(r.k) ?? 0) + r.n);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const result = await run();
  busy = false;
  await loop;
  const top = [...counts].filter(([k]) => !k.startsWith('idle Client:ClientRead')).sort((a, b) => b[1] - a[1]).slice(0, 5)
    .map(([k, n]) => `${k} ${(n / samples).toFixed(1)}`).join(', ');
  return { result, activity: `payd connections (mean over ${samples} samples): ${top}` };
}

interface Row { rps: number; p50: number; p99: number; bad: number; detail?: string; cpuUs?: number; sysShare?: number; dbCpuUs?: number }
const results = new Map<string, Row>();

/**
 * Stretches of one load, of equal length, as one row: the mean rate, the worst p99, the
 * mean p50, the errors summed, the CPU per request over all of them.
 */
function combined(rows: Row[]): Row {
  const n = rows.length;
  const total = rows.reduce((s, r) => s + r.rps, 0);
  const per = (f: (r: Row) => number | undefined) => rows.every((r) => f(r) !== undefined)
    ? rows.reduce((s, r) => s + f(r)! * r.rps, 0) / total : undefined;
  const cpuUs = per((r) => r.cpuUs);
  const sysShare = per((r) => r.sysShare === undefined || r.cpuUs === undefined ? undefined : r.sysShare * r.cpuUs);
  const dbCpuUs = per((r) => r.dbCpuUs);
  return {
    rps: total / n, p50: Math.round(rows.reduce((s, r) => s + r.p50, 0) / n), p99: Math.max(...rows.map((r) => r.p99)),
    bad: rows.reduce((s, r) => s + r.bad, 0), detail: rows.map((r) => r.detail ?? '').join(''),
    ...(cpuUs === undefined ? {} : { cpuUs, ...(sysShare === undefined ? {} : { sysShare: sysShare / cpuUs }) }),
    ...(dbCpuUs === undefined ? {} : { dbCpuUs }),
  };
}

/** How long `load` runs: the scenario's seconds, or the warm-up's while `warm` runs one. */
let duration = seconds;

/**
 * Runs a scenario for BENCH_WARMUP seconds, unmeasured, so that the figure that follows is
 * of a process whose code the JIT has compiled, as a server that has been up a while.
 * Every process gets the same (payd, the baselines, the mock): a fresh process runs its
 * first thousand requests several times slower.
 */
async function warm(run: () => Promise<unknown>): Promise<void> {
  if (!(warmupSeconds > 0)) return;
  duration = warmupSeconds;
  try {
    await run();
  } finally {
    duration = seconds;
  }
}

function load(url: string, opts: Record<string, unknown>, conns = connections): Promise<Row> {
  return autocannon({ url, connections: conns, duration, ...rate, ...opts }).then((r: {
    requests: { average: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number; timeouts: number; statusCodeStats: Record<string, { count: number }>;
  }) => ({
    rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, bad: r.non2xx + r.errors + r.timeouts,
    detail: r.non2xx + r.errors + r.timeouts === 0 ? '' : ` (statuses ${JSON.stringify(Object.fromEntries(Object.entries(r.statusCodeStats).map(([k, v]) => [k, v.count])))}, errors ${r.errors}, timeouts ${r.timeouts})`,
  }));
}

function print(name: string, row: Row, unit = 'req/s', extra = '') {
  results.set(name, row);
  const per = ({ 'req/s': 'request', 'pairs/s': 'pair', 'flows/s': 'flow' } as Record<string, string>)[unit] ?? unit;
  const cpu = row.cpuUs === undefined ? '' : `  CPU ${row.cpuUs.toFixed(0).padStart(5)} µs/${per} (kernel ${(100 * (row.sysShare ?? 0)).toFixed(0).padStart(2)}%)` +
    (row.dbCpuUs === undefined ? '' : `, PostgreSQL ${row.dbCpuUs.toFixed(0).padStart(4)}`);
  console.log(`${name.padEnd(44)} ${row.rps.toFixed(0).padStart(6)} ${unit}  p50 ${String(row.p50).padStart(4)} ms  p99 ${String(row.p99).padStart(4)} ms  non-2xx/errors ${row.bad}${cpu}${row.detail ?? ''}${extra}`);
}

function ratio(name: string, baseline: string, target: number): string {
  const a = results.get(name);
  const b = results.get(baseline);
  if (!a || !b) return '';
  const r = a.rps / b.rps;
  // The serving processes' CPU per request: payd's own overhead, less sensitive to what
  // else the machine runs than the throughputs (the database's share is not counted).
  const cpu = a.cpuUs && b.cpuUs ? `; its process used ${(a.cpuUs / b.cpuUs).toFixed(1)} times the CPU per request` : '';
  // At a fixed BENCH_RATE both serve the rate asked: the ratio says nothing of the target.
  const verdict = process.env.BENCH_RATE ? ': no verdict at a fixed rate' : r < target ? ', NOT MET' : ', met';
  return `${name}: ${r.toFixed(2)} of ${baseline} (target ${target}${verdict})${cpu}`;
}

const want = (name: string) => !only || only.some((o) => name.includes(o));

/** A card payment, MANUAL, of `amount` cents. */
export const paymentBody = (amount: number) => JSON.stringify({
  amount, currency: 'EUR', capture_mode: 'MANUAL', order: { reference: 'bench' },
  split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' } }],
});

/** The pair flow on payd: create, then capture the full amount of what was created. */
/**
 * A request of autocannon's with a fresh idempotency key in `header`, as the SDK sends on
 * every creating call (x-idempotency-key; the mock's Idempotency-Key), and the same key
 * on the baseline, which stores it under a unique index as payd does.
 */
export function keyed(req: Record<string, unknown>, header = 'x-idempotency-key'): Record<string, unknown> {
  return { ...req, headers: { ...(req.headers as Record<string, string>), [header]: randomUUID() } };
}

/** A pair flow on a JSON server: the create request, then the capture of what it created; each request keyed. */
export interface Pair { headers: Record<string, string>; createPath: string; createBody: string; capturePath: (id: string) => string; captureBody: string }

/** payd's pair: a MANUAL card payment of `amount`, then the capture of all of it. */
export const paydPairOf = (auth: Record<string, string>, amount = 1000): Pair => ({
  headers: auth, createPath: '/v2/payments', createBody: paymentBody(amount),
  capturePath: (id) => `/v2/payments/${id}/captures`, captureBody: JSON.stringify({ amount }),
});

/** The same-work pair of bench/baselines.ts, the durable floor. */
export const baselinePairOf = (entityId: string): Pair => ({
  headers: { 'content-type': 'application/json' }, createPath: '/create', createBody: JSON.stringify({ amount: 1000, entity_id: entityId }),
  capturePath: (id) => `/capture/${id}`, captureBody: JSON.stringify({ amount: 1000 }),
});

/** A pair as autocannon's requests (the created id taken from the answer). */
function loaded(pair: Pair) {
  return {
    requests: [
      { method: 'POST', path: pair.createPath, headers: pair.headers, body: pair.createBody, setupRequest: (req: Record<string, unknown>) => keyed(req),
        onResponse: (_s: number, body: string, ctx: Record<string, unknown>) => { ctx.id = /"id":"([^"]+)"/.exec(body)?.[1]; } },
      { method: 'POST', headers: pair.headers, body: pair.captureBody,
        setupRequest: (req: Record<string, unknown>, ctx: Record<string, unknown>) => keyed({ ...req, path: pair.capturePath(String(ctx.id)) }) },
    ],
  };
}

/** A pair as bench/paced.ts's flow. */
export function pacedFlow(pair: Pair): PacedRequest[] {
  const idOf = (earlier: unknown[]) => (earlier[0] as { id: string }).id;
  return [
    { method: 'POST', path: () => pair.createPath, headers: pair.headers, body: pair.createBody, keyed: 'x-idempotency-key' },
    { method: 'POST', path: (e) => pair.capturePath(idOf(e)), headers: pair.headers, body: pair.captureBody, keyed: 'x-idempotency-key' },
  ];
}

/** A merchant on the payd at `base`: its id, its API key's token form, and JSON headers with an access token. */
export async function onboard(base: string): Promise<{ entityId: string; form: Record<string, string>; auth: Record<string, string> }> {
  const entity = await call(base, 'POST', '/admin/v1/entities', adminH, JSON.stringify({ name: 'Bench merchant' }));
  const key = await call(base, 'POST', `/admin/v1/entities/${entity.id}/api-keys`, adminH, '{}');
  const form = { 'content-type': 'application/x-www-form-urlencoded', 'x-api-key': key.api_key as string };
  const token = (await call(base, 'POST', '/oauth/token', form, 'grant_type=client_credentials')).access_token as string;
  return { entityId: entity.id as string, form, auth: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } };
}

/** Pairs per second and the per-request latency of a pair-flow run (autocannon counts each request). */
const pairs = (r: Row): Row => ({ ...r, rps: r.rps / 2 });

export async function runThroughput(): Promise<void> {
  const dbName = `payd_bench_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: `${pgRoot}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  // An experiment, never a setting to ship: commits that do not wait for the WAL flush,
  // to see how much of a flow's time is that wait.
  if (process.env.BENCH_EXPERIMENT_ASYNC_COMMIT === '1') await admin.query(`ALTER DATABASE ${dbName} SET synchronous_commit = off`);
  const dbUrl = `${pgRoot}/${dbName}`;
  const children: Array<() => Promise<void>> = [];
  try {
    console.log(`payd throughput: \`payd start\` (defaults, LOG_LEVEL=${LOG_LEVEL}) on PostgreSQL (${dbName}, dropped after), ${seconds}s per scenario, ${connections} connections\n`);
    const payd = await startPayd(dbUrl, {}, process.env.BENCH_PAYD_DIR);
    if (process.env.BENCH_PAYD_DIR) console.log(`payd from ${process.env.BENCH_PAYD_DIR}\n`);
    children.push(payd.stop);
    const base = await startProcess(['--import', 'tsx', 'bench/baselines.ts'], { ...process.env, DATABASE_URL: dbUrl }, (l) => l.startsWith('{'));
    children.push(() => stop(base.child));
    const baseUrl = `http://127.0.0.1:${(JSON.parse(base.line) as { port: number }).port}`;
    const mockPort = await freePort();
    // (The mock says nothing once started at LOG_LEVEL=warn: its port is polled instead.)
    const mockChild = spawn(process.execPath, [path.resolve('node_modules/stripe-stateful-mock/dist/cli.js')], { stdio: 'ignore', env: { ...process.env, PORT: String(mockPort), LOG_LEVEL: 'warn' } });
    children.push(() => stop(mockChild));
    const mockUrl = `http://127.0.0.1:${mockPort}`;
    // node-oidc-provider, the token endpoint's peer, with JWT and with opaque tokens (only
    // when the token scenario runs).
    const wantTokens = want('POST /oauth/token');
    const peers: Record<string, { url: string; pid: number | undefined }> = {};
    for (const format of wantTokens ? ['jwt', 'opaque'] : []) {
      const peer = await startProcess(['--import', 'tsx', 'bench/oidc-provider-peer.ts'], { ...process.env, PORT: '0', PEER_FORMAT: format, PEER_CLIENT_ID: PEER_CLIENT.id, PEER_CLIENT_SECRET: PEER_CLIENT.secret }, (l) => l.startsWith('{'));
      children.push(() => stop(peer.child));
      peers[format] = { url: `http://127.0.0.1:${(JSON.parse(peer.line) as { port: number }).port}`, pid: peer.child.pid };
    }
    for (let i = 0; i < 100; i++) {
      if (await fetch(`${mockUrl}/v1/charges`, { headers: { authorization: 'Bearer sk_test_bench' } }).then(() => true, () => false)) break;
      await new Promise((r) => setTimeout(r, 100));
    }

    const { entityId, form, auth } = await onboard(payd.base);
    const sample = await call(payd.base, 'POST', '/v2/payments', auth, paymentBody(1000));
    await call(baseUrl, 'POST', '/template', { 'content-type': 'application/json' }, JSON.stringify(sample));
    const json = { 'content-type': 'application/json' };
    // More tokens than a process remembers (VERIFIED_MAX), used round-robin: each request
    // verifies its token's signature and claims.
    const manyTokens = want('verified API call, token not remembered (payd)') ? await inParallel(VERIFIED_MAX + 2000,
      async () => (await call(payd.base, 'POST', '/oauth/token', form, 'grant_type=client_credentials')).access_token as string) : [];

    // Payments to capture from, for the capture-alone scenarios: many, so that captures
    // do not queue on one row lock; each gets a few one-cent captures during the run.
    const TARGETS = Number(process.env.BENCH_CAPTURE_TARGETS ?? 2000);
    const want2 = want('capture alone (payd)'); // (BENCH_ONLY="capture alone" or "capture alone (payd)"; the baselines always run)
    const wantCold = want('capture alone, not remembered (payd)');
    const paydTarget = async () => (await call(payd.base, 'POST', '/v2/payments', auth, paymentBody(5_000_000))).id as string;
    const paydTargets = want2 ? await inParallel(TARGETS, paydTarget) : [];
    const coldTargets = wantCold ? await inParallel(4 * RECENT_PAYMENTS_DEFAULT, paydTarget) : [];
    const baseTargets = want2 || wantCold ? await inParallel(TARGETS, async () => (await call(baseUrl, 'POST', '/create', json, JSON.stringify({ amount: 5_000_000, entity_id: entityId }))).id as string) : [];

    // The authorization code flow of a signed-in user (issue 14): an identity user and a
    // public application; one password login through the identity SDK's endpoint gives the
    // sign-in session; each flow then asks /oauth/authorize for a code (response_mode
    // web_message: a 200 with the code in the page) and exchanges it with PKCE at the
    // token endpoint. Flows per second = requests / 2.
    const idpCallback = 'https://bench.example/callback';
    await call(payd.base, 'POST', '/admin/v1/identity/users', adminH, JSON.stringify({ email: 'bench@example.com', password: 'a sturdy bench passphrase' }));
    const idpApp = await call(payd.base, 'POST', '/admin/v1/identity/applications', adminH,
      JSON.stringify({ name: 'Bench SPA', callback_urls: [idpCallback], token_endpoint_auth_method: 'none', first_party: true }));
    const tkn = (await call(payd.base, 'POST', '/identity/v1/password/login', json,
      JSON.stringify({ client_id: idpApp.client_id, email: 'bench@example.com', password: 'a sturdy bench passphrase' }))).tkn as string;
    const verifier = 'bench-verifier-0123456789-0123456789-0123456789';
    const pkce = new URLSearchParams({ code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' });
    const authorizePath = `/oauth/authorize?${new URLSearchParams({ client_id: String(idpApp.client_id), response_type: 'code', redirect_uri: idpCallback, scope: 'openid profile email' })}&${pkce}`;
    const signed = await fetch(`${payd.base}${authorizePath}&tkn=${tkn}`, { redirect: 'manual' });
    const idpCookie = signed.headers.getSetCookie().find((c) => c.startsWith('payd_idp_session=') && c.includes('Path=/oauth'))!.split(';')[0]!;

    const peerH = {
      authorization: `Basic ${Buffer.from(`${PEER_CLIENT.id}:${PEER_CLIENT.secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded',
    };
    const peerToken = (format: string) => () => load(`${peers[format]!.url}/token`, { method: 'POST', headers: peerH, body: 'grant_type=client_credentials&scope=payment-api' });
    let nextToken = 0;
    const readPath = `/v2/payments/${String(sample.id)}`;
    const stored = { 'cache-control': 'max-age=60' };
    const stripeH = { authorization: 'Bearer sk_test_bench', 'content-type': 'application/x-www-form-urlencoded' };
    type Scenario = { name: string; unit?: string; run: () => Promise<Row> };
    /**
     * autocannon's requests to the path of each target in turn, round-robin. Made once per
     * scenario, so that its measured run goes on where its warm-up stopped.
     */
    const roundRobin = (targets: string[], pathOf: (id: string) => string) => {
      let next = 0;
      return [{ setupRequest: (req: Record<string, unknown>) => keyed({ ...req, path: pathOf(targets[next++ % targets.length]!) }) }];
    };
    const paydCapture = (id: string) => `/v2/payments/${id}/captures`;
    const baseCaptures = roundRobin(baseTargets, (id) => `/capture/${id}`);
    const paydCaptures = roundRobin(paydTargets, paydCapture);
    const coldCaptures = roundRobin(coldTargets, paydCapture);
    const scenarios: Scenario[] = [
      { name: 'hello (baseline)', run: () => load(`${baseUrl}/hello`, { method: 'GET' }) },
      { name: 'POST /oauth/token (client credentials)', run: () => load(`${payd.base}/oauth/token`, { method: 'POST', headers: form, body: 'grant_type=client_credentials' }) },
      { name: 'token endpoint (oidc-provider peer, JWT HS256)', run: peerToken('jwt') },
      { name: 'token endpoint (oidc-provider peer, opaque)', run: peerToken('opaque') },
      // A read of the stored payment (Cache-Control max-age: no partner is asked), one indexed row.
      { name: 'verified API call (payd, GET /v2/payments/{id})', run: () => load(`${payd.base}${readPath}`, { method: 'GET', headers: { authorization: auth.authorization!, ...stored } }) },
      { name: 'verified API call, token not remembered (payd)', run: () => load(payd.base, { method: 'GET', requests: [{
        setupRequest: (req: Record<string, unknown>) => ({ ...req, path: readPath, headers: { authorization: `Bearer ${manyTokens[nextToken++ % manyTokens.length]}`, ...stored } }) }] }) },
      { name: 'authorization code flow (payd)', unit: 'flows/s', run: () => load(payd.base, { requests: [
        { method: 'GET', path: `${authorizePath}&response_mode=web_message&prompt=none`, headers: { cookie: idpCookie },
          onResponse: (_s: number, body: string, ctx: Record<string, unknown>) => { ctx.code = /"code":"([^"]+)"/.exec(body)?.[1]; } },
        { method: 'POST', path: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
          setupRequest: (req: Record<string, unknown>, ctx: Record<string, unknown>) => ({ ...req, body: new URLSearchParams({
            grant_type: 'authorization_code', client_id: idpApp.client_id as string, code: String(ctx.code), redirect_uri: idpCallback, code_verifier: verifier }).toString() }) },
      ] }).then(pairs) },
      { name: 'create (same-work baseline)', run: () => load(`${baseUrl}/create`, { method: 'POST', headers: json, body: JSON.stringify({ amount: 1000, entity_id: entityId }),
        requests: [{ setupRequest: (req: Record<string, unknown>) => keyed(req) }] }) },
      { name: 'create (payd)', run: () => load(`${payd.base}/v2/payments`, { method: 'POST', headers: auth, body: paymentBody(1000),
        requests: [{ setupRequest: (req: Record<string, unknown>) => keyed(req) }] }) },
      { name: 'capture alone (same-work baseline)', run: () => load(baseUrl, { method: 'POST', headers: json, body: JSON.stringify({ amount: 1 }),
        requests: baseCaptures }) },
      { name: 'capture alone (payd)', run: () => load(payd.base, { method: 'POST', headers: auth, body: JSON.stringify({ amount: 1 }),
        requests: paydCaptures }) },
      { name: 'capture alone, not remembered (payd)', run: () => load(payd.base, { method: 'POST', headers: auth, body: JSON.stringify({ amount: 1 }),
        requests: coldCaptures }) },
      { name: 'pair (stripe-stateful-mock)', unit: 'pairs/s', run: () => load(mockUrl, { requests: [
        { method: 'POST', path: '/v1/charges', headers: stripeH, body: 'amount=1000&currency=eur&source=tok_visa&capture=false',
          setupRequest: (req: Record<string, unknown>) => keyed(req, 'idempotency-key'),
          onResponse: (_s: number, body: string, ctx: Record<string, unknown>) => { ctx.id = /"id":\s*"([^"]+)"/.exec(body)?.[1]; } },
        { method: 'POST', headers: stripeH, body: 'amount=1000',
          setupRequest: (req: Record<string, unknown>, ctx: Record<string, unknown>) => keyed({ ...req, path: `/v1/charges/${ctx.id}/capture` }, 'idempotency-key') },
      ] }).then(pairs) },
      // The durable floor of the pair: the same-work create, then the same-work capture of it.
      { name: 'pair (same-work baseline)', unit: 'pairs/s', run: () => load(baseUrl, loaded(baselinePairOf(entityId))).then(pairs) },
      { name: 'pair (payd)', unit: 'pairs/s', run: () => load(payd.base, loaded(paydPairOf(auth))).then(pairs) },
    ];
    for (const s of scenarios) {
      if (!want(s.name) && !s.name.includes('baseline') && !s.name.includes('stripe') && !(s.name.includes('oidc-provider') && wantTokens)) continue;
      if (s.name.startsWith('capture alone') && baseTargets.length === 0) continue;
      if (s.name.includes('oidc-provider') && !wantTokens) continue;
      const paydScenario = s.name.includes('payd') || s.name.includes('oauth');
      const peer = s.name.includes('oidc-provider') ? peers[s.name.includes('JWT') ? 'jwt' : 'opaque'] : undefined;
      const pid = paydScenario ? payd.child.pid : peer ? peer.pid : s.name.includes('stripe') ? mockChild.pid : base.child.pid;
      await warm(s.run);
      if (paydScenario) {
        const { result, activity } = await sampled(admin, dbName, () => withCpu(pid, s.run, { admin, dbName }));
        print(s.name, result, s.unit, `\n${' '.repeat(46)}${activity}`);
      } else {
        print(s.name, await withCpu(pid, s.run, s.name.includes('stripe') || peer ? undefined : { admin, dbName }), s.unit);
      }
    }
    // Issue 44's latency at a fixed 200 pairs/s, as an open-loop load (bench/paced.ts):
    // the bare hello route at the same request rate, the same-work pair, payd's pair.
    let pacedLine = '';
    if (want('paced') && !process.env.BENCH_RATE) {
      const rate = Number(process.env.BENCH_PACED_RATE ?? 200);
      const pacedOpts = { rate, seconds, connections };
      const flows: Array<[string, string, PacedRequest[], number]> = [
        ['hello (baseline)', baseUrl, [{ method: 'GET', path: () => '/hello' }], 2 * rate],
        ['pair (same-work baseline)', baseUrl, pacedFlow(baselinePairOf(entityId)), rate],
        ['pair (payd)', payd.base, pacedFlow(paydPairOf(auth)), rate],
      ];
      console.log(`\nopen-loop load at ${rate} pairs/s (${2 * rate} requests/s), ${seconds}s each after ${warmupSeconds}s unmeasured, at most ${connections} connections; latency of each request from its sending`);
      for (const [name, url, flow, flowRate] of flows) {
        if (warmupSeconds > 0) await paced(url, flow, { ...pacedOpts, rate: flowRate, seconds: warmupSeconds });
        const r = await paced(url, flow, { ...pacedOpts, rate: flowRate });
        const unit = flow.length === 1 ? 'req/s' : 'pairs/s';
        console.log(`${`${name}, paced`.padEnd(44)} ${r.flowsPerSecond.toFixed(0).padStart(6)} ${unit}  p50 ${r.p50.toFixed(1).padStart(5)} ms  p99 ${r.p99.toFixed(1).padStart(5)} ms  max ${r.max.toFixed(0).padStart(4)} ms  non-2xx/errors ${r.bad}${r.late ? `  (${r.late} flows started late by the client)` : ''}`);
        if (name === 'pair (payd)' && rate === 200) pacedLine = `pair (payd) p99 per request at a fixed 200 pairs/s: ${r.p99.toFixed(1)} ms (target < 20 ms${r.p99 >= 20 ? ', NOT MET' : ', met'})`;
      }
    }
    const peak = payd.peakRss();
    await payd.stop();

    let slowLine = '';
    if (process.env.BENCH_SLOW !== '0' && want('slow')) {
      /** The pair flow on a payd of its own, started with `env` and warmed; `measure` runs one stretch of it. */
      const pairOn = async (env: Record<string, string>, conns: number) => {
        const own = await startPayd(dbUrl, env);
        children.push(own.stop);
        const t = (await call(own.base, 'POST', '/oauth/token', form, 'grant_type=client_credentials')).access_token as string;
        const run = () => load(own.base, loaded(paydPairOf({ authorization: `Bearer ${t}`, 'content-type': 'application/json' })), conns).then(pairs);
        await warm(run);
        await quiet(own.child.pid);
        return {
          own,
          measure: async () => {
            const out = await sampled(admin, dbName, () => withCpu(own.child.pid, run, { admin, dbName }));
            // autocannon stops with requests in flight (400 flows queue for a second or
            // more): the process finishes them before the other load's stretch begins.
            await quiet(own.child.pid);
            return out;
          },
        };
      };
      // The no-latency figure of the same configuration: partners called (not answered
      // inline) and answering at once, with the usual connections; and, on the same
      // database, a payd whose partners answer after 200 ms: every request writes ahead,
      // calls the partner, then settles. Both processes are up at once and the two loads
      // alternate in BENCH_SLOW_ROUNDS stretches each (the scenario's seconds shared
      // between them), so that the machine's drift falls on both figures alike.
      const called = await pairOn({ PAYD_SIM_INLINE: 'false' }, connections);
      const slow = await pairOn({ PAYD_SIM_INLINE: 'false', PAYD_SIM_LATENCY_MS: String(slowLatency) }, slowConnections);
      const rounds = Math.max(1, Number(process.env.BENCH_SLOW_ROUNDS ?? 2));
      const calledRuns: Array<Awaited<ReturnType<typeof called.measure>>> = [];
      const slowRuns: typeof calledRuns = [];
      duration = seconds / rounds;
      try {
        for (let i = 0; i < rounds; i++) {
          calledRuns.push(await called.measure());
          slowRuns.push(await slow.measure());
        }
      } finally {
        duration = seconds;
      }
      /** The stretches of one load, printed as one row. */
      const report = (name: string, runs: typeof calledRuns): Row => {
        const row = combined(runs.map((r) => r.result));
        print(name, row, 'pairs/s', runs.map((r) => `\n${' '.repeat(46)}${r.activity}`).join(''));
        return row;
      };
      const calledRun = report('pair (payd), partners called, no latency', calledRuns);
      const result = report(`pair (payd), partner latency ${slowLatency} ms, ${slowConnections} flows`, slowRuns);
      const peakRss = slow.own.peakRss();
      await called.own.stop();
      await slow.own.stop();
      // The issue's target: 0.8 of what the flows allow at 2 x 200 ms or of the no-latency
      // figure of the same configuration, whichever is lower. Also printed: the ratio to
      // the inline pair (partners answering in process), a stricter reference.
      const allowed = Math.min(slowConnections / (2 * slowLatency / 1000), calledRun.rps);
      const inlinePair = results.get('pair (payd)')?.rps;
      slowLine = `slow partner: ${(result.rps / allowed).toFixed(2)} of ${allowed.toFixed(0)} pairs/s allowed (target 0.8${result.rps / allowed < 0.8 ? ', NOT MET' : ', met'})` +
        `${inlinePair ? `, ${(result.rps / inlinePair).toFixed(2)} of the inline pair's ${inlinePair.toFixed(0)}` : ''}, ${result.bad} non-2xx/errors (target 0); peak RSS ${peakRss.toFixed(0)} MB`;
    }

    console.log(`\npeak payd RSS (default scenarios): ${peak.toFixed(0)} MB (target < 200 MB)`);
    const flows = results.get('authorization code flow (payd)');
    const hello = results.get('hello (baseline)');
    if (flows && hello) console.log(`authorization code flow (payd): ${(flows.rps * 2 / hello.rps).toFixed(2)} of hello's req/s per request (a flow is 2 requests)`);
    // The token endpoint against node-oidc-provider's faster configuration (issue 41: at least twice).
    const peerRows = ['token endpoint (oidc-provider peer, JWT HS256)', 'token endpoint (oidc-provider peer, opaque)'].filter((n) => results.has(n));
    const fastestPeer = peerRows.sort((a, b) => results.get(b)!.rps - results.get(a)!.rps)[0];
    if (fastestPeer) console.log(ratio('POST /oauth/token (client credentials)', fastestPeer, 2));
    for (const name of ['POST /oauth/token (client credentials)', ...peerRows, 'verified API call (payd, GET /v2/payments/{id})', 'verified API call, token not remembered (payd)']) {
      const row = results.get(name);
      if (row && hello) console.log(`${name}: ${(row.rps / hello.rps).toFixed(2)} of hello's req/s`);
    }
    for (const line of [
      ratio('pair (payd)', 'pair (stripe-stateful-mock)', 0.5),
      ratio('pair (same-work baseline)', 'pair (stripe-stateful-mock)', 0.5),
      // Issue 44's targets against the same-work floor: 0.6 for the pair and the create,
      // 0.5 for a capture of a payment not remembered (and a remembered one).
      ratio('pair (payd)', 'pair (same-work baseline)', 0.6),
      ratio('create (payd)', 'create (same-work baseline)', 0.6),
      ratio('capture alone (payd)', 'capture alone (same-work baseline)', 0.5),
      ratio('capture alone, not remembered (payd)', 'capture alone (same-work baseline)', 0.5),
      slowLine,
      pacedLine,
    ]) if (line) console.log(line);
    const p = results.get('pair (payd)');
    // Issue 44: p99 < 50 ms at BENCH_CONNECTIONS (50) at saturation, < 20 ms at a fixed 200
    // pairs/s (BENCH_RATE=400: autocannon's rate counts requests, two a pair).
    const fixedRate = process.env.BENCH_RATE ? Number(process.env.BENCH_RATE) : undefined;
    const fixed200 = fixedRate === 400;
    const p99Target = fixed200 ? 20 : fixedRate === undefined ? 50 : undefined;
    if (p && p99Target !== undefined) console.log(`pair (payd) p99 per request: ${p.p99} ms (target < ${p99Target} ms${fixed200 ? ' at 200 pairs/s' : ` at ${connections} connections`}${p.p99 >= p99Target ? ', NOT MET' : ', met'})`);
    else if (p) console.log(`pair (payd) p99 per request: ${p.p99} ms at ${fixedRate} requests/s (issue 44's targets are at saturation and at 200 pairs/s)`);
  } finally {
    for (const s of children.reverse()) await s().catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch((err: unknown) => console.error(`could not drop ${dbName}: ${String(err)}`));
    await admin.end();
  }
}
