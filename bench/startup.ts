// Start-up bench (payd issue 17): the time from spawning `node bin/payd.js start` to the
// first 200 of GET /healthz, and the process's RSS then, beside a bare Fastify process
// started the same way (bench/hello-server.js):
//   - embedded database (PGlite), a new data directory (first start);
//   - embedded database, a restart on that directory;
//   - PostgreSQL already migrated (DATABASE_URL, or BENCH_STARTUP_DATABASE_URL; skipped
//     when neither is set): a database of its own, migrated by `payd migrate`, then started.
// Each is run BENCH_STARTUP_RUNS times (default 3); the median and the fastest are printed.
// payd runs from dist/ only (PAYD_FROM_SOURCES=0, bench/proc.ts): a checkout whose src/ is
// newer than dist/ fails here (npm run build) instead of timing the sources run through tsx.
//
//   node --import tsx bench/startup.ts        (also the last part of npm run bench)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { COMPILED_ONLY, cpuTotalMs, freePort, rssMb } from './proc.ts';

const runs = Math.max(1, Number(process.env.BENCH_STARTUP_RUNS ?? 3));
const pgServer = process.env.BENCH_STARTUP_DATABASE_URL ?? process.env.DATABASE_URL;

/** Wall time to the first 200, the CPU time payd used by then (user + system), RSS then. */
export interface Start { ms: number; cpuMs: number; rssMb: number }

/** Spawns node with args, polls /healthz every 10 ms until a 200, measures, stops it. */
export async function timeStart(args: string[], env: Record<string, string>): Promise<Start> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', PAYD_DEMO: '0', ...COMPILED_ONLY, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  let exited = false;
  child.once('exit', () => { exited = true; });
  try {
    for (;;) {
      if (exited) throw new Error(`${args.join(' ')} exited before answering: ${stderr}`);
      if (performance.now() - started > 180_000) throw new Error(`${args.join(' ')}: no 200 from /healthz within 180 s`);
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status === 200, () => false);
      if (ok) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    return { ms: performance.now() - started, cpuMs: cpuTotalMs(child.pid), rssMb: rssMb(child.pid) };
  } finally {
    if (!exited) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    }
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// The CPU time is printed beside the wall time: on a machine other work loads, the wall
// time stretches but the CPU time (what the start costs on a quiet machine, roughly) does not.
function summary(label: string, starts: Start[], baseline?: Start[]): { ms: number; rssMb: number } {
  const ms = median(starts.map((s) => s.ms));
  const cpu = median(starts.map((s) => s.cpuMs));
  const rss = median(starts.map((s) => s.rssMb));
  const ratio = baseline
    ? `  ratio ${(ms / median(baseline.map((s) => s.ms))).toFixed(1)} (CPU ${(cpu / median(baseline.map((s) => s.cpuMs))).toFixed(1)})`
    : '';
  console.log(`${label.padEnd(44)} ${ms.toFixed(0).padStart(6)} ms median (fastest ${Math.min(...starts.map((s) => s.ms)).toFixed(0).padStart(5)})  CPU ${cpu.toFixed(0).padStart(5)} ms  RSS ${rss.toFixed(0).padStart(4)} MB${ratio}`);
  return { ms, rssMb: rss };
}

function payd(...args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/payd.js', ...args], { env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`payd ${args.join(' ')} exited ${code}`))));
  });
}

/** Wall time from spawning node with these arguments to its exit. */
async function timeExit(args: string[]): Promise<number> {
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: 'ignore', env: { ...process.env, ...COMPILED_ONLY } });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${args.join(' ')} exited with ${code} (npm run build?)`))));
  });
  return performance.now() - started;
}

export async function startupBench(): Promise<void> {
  console.log(`\npayd start-up: spawn to the first 200 of /healthz, ${runs} run(s) each, ratios to the bare Fastify start; payd from dist/ (PAYD_FROM_SOURCES=0); load average ${os.loadavg()[0]!.toFixed(1)} on ${os.availableParallelism()} CPUs`);
  const checks: string[] = [];
  const target = (what: string, value: number, max: number, unit: string) => {
    if (value > max) checks.push(`ABOVE TARGET: ${what} ${value.toFixed(0)} ${unit} (target < ${max} ${unit})`);
  };

  // The commands a developer types: answered and exited, beside a bare `node -e 0`.
  const bare: number[] = [];
  const version: number[] = [];
  const help: number[] = [];
  for (let i = 0; i < runs * 2; i++) {
    bare.push(await timeExit(['-e', '0']));
    version.push(await timeExit(['bin/payd.js', '--version']));
    help.push(await timeExit(['bin/payd.js', '--help']));
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`${'node -e 0 (baseline)'.padEnd(44)} ${med(bare).toFixed(0).padStart(6)} ms median`);
  for (const [label, xs] of [['payd --version', version], ['payd --help', help]] as const) {
    console.log(`${label.padEnd(44)} ${med(xs).toFixed(0).padStart(6)} ms median  ratio ${(med(xs) / med(bare)).toFixed(1)}`);
    target(label, med(xs), 500, 'ms');
  }

  const hello: Start[] = [];
  for (let i = 0; i < runs; i++) hello.push(await timeStart(['bench/hello-server.js'], {}));
  summary('bare Fastify hello (baseline)', hello);

  const fresh: Start[] = [];
  const restart: Start[] = [];
  for (let i = 0; i < runs; i++) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'payd-startup-bench-'));
    try {
      fresh.push(await timeStart(['bin/payd.js', 'start'], { PAYD_DATA_DIR: dir }));
      restart.push(await timeStart(['bin/payd.js', 'start'], { PAYD_DATA_DIR: dir }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const f = summary('payd, embedded database, new data directory', fresh, hello);
  const r = summary('payd, embedded database, restart', restart, hello);
  target('first start on a new data directory', f.ms, 3000, 'ms');
  target('restart on the embedded database', r.ms, 2000, 'ms');
  target('RSS after start on the embedded database', Math.max(f.rssMb, r.rssMb), 250, 'MB');

  if (pgServer) {
    const name = `payd_startup_${process.pid}`;
    const admin = new pg.Client({ connectionString: pgServer });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(pgServer);
    url.pathname = `/${name}`;
    try {
      const env = { DATABASE_URL: url.toString(), PAYD_MASTER_KEY: Buffer.alloc(32, 9).toString('base64') };
      process.env.DATABASE_URL = env.DATABASE_URL;
      process.env.PAYD_MASTER_KEY = env.PAYD_MASTER_KEY;
      await payd('migrate');
      const migrated: Start[] = [];
      for (let i = 0; i < runs; i++) migrated.push(await timeStart(['bin/payd.js', 'start'], env));
      const p = summary('payd, PostgreSQL already migrated', migrated, hello);
      target('start on a migrated PostgreSQL', p.ms, 1500, 'ms');
      target('RSS after start on PostgreSQL', p.rssMb, 200, 'MB');
    } finally {
      process.env.DATABASE_URL = pgServer;
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  } else {
    console.log('payd, PostgreSQL already migrated                skipped (set DATABASE_URL or BENCH_STARTUP_DATABASE_URL)');
  }
  for (const line of checks) console.log(line);
}

if (import.meta.url === `file://${process.argv[1]}`) await startupBench();
