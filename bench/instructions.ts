// Instructions per create+capture pair of `payd start` (dist/, its defaults), counted by
// `perf stat` on the payd process alone: a figure that moves far less with the machine's
// other load than time and CPU per request do (several-fold on a shared 2-core host), to
// compare two builds or two settings run alternately in the same period. It still
// includes payd's work per second (workers, timers), so a slower run counts a little more
// per pair. PostgreSQL's work is not counted (a pair makes one statement per request).
//
//   npm run build && node --import tsx bench/instructions.ts
//   BENCH_PAYD_DIR=/tmp/before node --import tsx bench/instructions.ts   (another built checkout)
//
// Env: BENCH_PG (postgres://postgres@127.0.0.1:5432), BENCH_PAIRS (3000, after 1500
// unmeasured), BENCH_CONCURRENCY (8), BENCH_LOG_LEVEL (info, payd's default), BENCH_ROUNDS (1).
// Needs perf (Debian's linux-perf) with hardware counters: `perf stat -e instructions true`.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { call, onboard, paymentBody, startPayd } from './throughput.ts';

const server = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';
const pairs = Number(process.env.BENCH_PAIRS ?? 3000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
const level = process.env.BENCH_LOG_LEVEL ?? 'info';
const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
const dir = process.env.BENCH_PAYD_DIR;

for (let round = 1; round <= rounds; round++) {
  const dbName = `payd_instr_${process.pid}_${round}`;
  const admin = new pg.Client({ connectionString: `${server}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const payd = await startPayd(`${server}/${dbName}`, { LOG_LEVEL: level }, dir);
  try {
    const { auth } = await onboard(payd.base);
    const pair = async () => {
      const p = await call(payd.base, 'POST', '/v2/payments', { ...auth, 'x-idempotency-key': randomUUID() }, paymentBody(1000));
      await call(payd.base, 'POST', `/v2/payments/${p.id}/captures`, { ...auth, 'x-idempotency-key': randomUUID() }, '{"amount":1000}');
    };
    const run = async (n: number) => {
      let i = 0;
      await Promise.all(Array.from({ length: concurrency }, async () => { while (i++ < n) await pair(); }));
    };
    await run(1500);
    const perf = spawn('perf', ['stat', '-x,', '-e', 'instructions:u,instructions:k,task-clock', '-p', String(payd.child.pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let out = '';
    perf.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    await new Promise((r) => setTimeout(r, 300)); // perf attached
    const started = performance.now();
    await run(pairs);
    const ms = performance.now() - started;
    perf.kill('SIGINT');
    await new Promise((r) => perf.once('exit', r));
    const counted = Object.fromEntries(out.trim().split('\n').map((l) => l.split(',')).map((f) => [f[2], Number(f[0])]));
    if (!counted['instructions:u']) throw new Error(`perf counted no instructions:\n${out}`);
    console.log(`${dir ?? 'this checkout'}, LOG_LEVEL=${level}, round ${round}: ${(counted['instructions:u']! / pairs / 1e6).toFixed(2)} M user instructions per pair, `
      + `${(counted['instructions:k']! / pairs / 1e6).toFixed(2)} M kernel; ${(counted['task-clock']! / pairs * 1000).toFixed(0)} µs CPU per pair, ${(pairs * 1000 / ms).toFixed(0)} pairs/s (these two move with the load)`);
  } finally {
    await payd.stop();
    await admin.query(`DROP DATABASE ${dbName} WITH (FORCE)`);
    await admin.end();
  }
}
