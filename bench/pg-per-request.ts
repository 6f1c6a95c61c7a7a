// What PostgreSQL does per request, payd against the same-work baseline (issue 44): on a
// fresh database, `payd start` (this checkout's, or BENCH_PAYD_DIR's) and bench/baselines.ts
// each run BENCH_N (1000) creates, then BENCH_N captures of the full amount of those
// payments, at BENCH_CONCURRENCY (10) clients. For each phase, from the database itself:
//   - every statement the server ran on the bench database (log_statement = all, set on
//     that database only; read back from the server's log file, BENCH_PG_LOG), per request,
//     grouped by the process's connection (payd or the baseline) and by statement text;
//   - trigger and function calls (track_functions = all on that database);
//   - rows inserted, updated (HOT or not), deleted, per table (pg_stat_user_tables);
//   - WAL bytes of the phase's transactions on this database only (pg_walinspect: records
//     touching its relations and those transactions' commit records), so that another
//     database's load on the same server is not counted;
//   - the CPU time of the serving process and of its backends, per request.
// After each phase it waits BENCH_SETTLE_MS (11 000: statistics are flushed within 10 s of
// a backend going idle) so that background work caused by the requests (outbox, webhook
// dispatcher, workers' polls) falls in the phase.
import { randomUUID } from 'node:crypto';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import pg from 'pg';
import { cpuTotalMs } from './proc.ts';
import { call, onboard, paymentBody, startPayd } from './throughput.ts';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const pgRoot = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';
const N = Number(process.env.BENCH_N ?? 1000);
const C = Number(process.env.BENCH_CONCURRENCY ?? 10);
const LOG = process.env.BENCH_PG_LOG ?? '/var/log/postgresql/postgresql-15-main.log';
const SETTLE = Number(process.env.BENCH_SETTLE_MS ?? 11_000);
const dbName = `payd_pgreq_${process.pid}`;
const admin = new pg.Client({ connectionString: `${pgRoot}/postgres` });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
await admin.query(`ALTER DATABASE ${dbName} SET log_statement = 'all'`);
await admin.query(`ALTER DATABASE ${dbName} SET track_functions = 'all'`);
// An experiment's setting of the bench database (name=value), e.g. plan_cache_mode=force_generic_plan.
for (const setting of process.env.BENCH_PROBE_SETTING?.split(';').filter(Boolean) ?? []) {
  const [k, v] = setting.split('=');
  await admin.query(`ALTER DATABASE ${dbName} SET ${k} = '${v}'`);
}
const dbUrl = `${pgRoot}/${dbName}`;
const db = new pg.Client({ connectionString: dbUrl, application_name: 'probe' });
const stops: Array<() => Promise<unknown>> = [];
try {
  await db.connect();
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  // An experiment's change to the bench database before payd starts (e.g. a trigger disabled).
  const oid = (await db.query<{ oid: number }>('SELECT oid FROM pg_database WHERE datname = $1', [dbName])).rows[0]!.oid;
  const payd = await startPayd(dbUrl, {}, process.env.BENCH_PAYD_DIR);
  stops.push(payd.stop);
  if (process.env.BENCH_PROBE_SQL) await db.query(process.env.BENCH_PROBE_SQL);
  const baseChild = spawn(process.execPath, ['--import', 'tsx', 'bench/baselines.ts'], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DATABASE_URL: dbUrl } });
  stops.push(async () => baseChild.kill('SIGTERM'));
  const basePort = await new Promise<number>((resolve) => {
    const lines = createInterface({ input: baseChild.stdout! });
    lines.on('line', (l) => { if (l.startsWith('{')) { lines.close(); baseChild.stdout!.resume(); resolve((JSON.parse(l) as { port: number }).port); } });
  });
  const baseUrl = `http://127.0.0.1:${basePort}`;
  const { entityId, auth } = await onboard(payd.base);
  const sample = await call(payd.base, 'POST', '/v2/payments', auth, paymentBody(1000));
  const json = { 'content-type': 'application/json' };
  await call(baseUrl, 'POST', '/template', json, JSON.stringify(sample));

  const post = async (url: string, headers: Record<string, string>, body: string) => {
    const res = await fetch(url, { method: 'POST', headers: { ...headers, 'x-idempotency-key': randomUUID() }, body });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${url}: ${res.status} ${text}`);
    return /"id":"([^"]+)"/.exec(text)![1]!;
  };
  const run = async (n: number, one: (i: number) => Promise<string>) => {
    const out: string[] = new Array(n);
    let next = 0;
    await Promise.all(Array.from({ length: C }, async () => { while (next < n) { const i = next++; out[i] = await one(i); } }));
    return out;
  };
  const targets = {
    payd: { pid: payd.child.pid, app: 'payd', create: () => post(`${payd.base}/v2/payments`, auth, paymentBody(1000)), capture: (id: string) => post(`${payd.base}/v2/payments/${id}/captures`, auth, JSON.stringify({ amount: 1000 })) },
    baseline: { pid: baseChild.pid, app: 'baseline', create: () => post(`${baseUrl}/create`, json, JSON.stringify({ amount: 1000, entity_id: entityId })), capture: (id: string) => post(`${baseUrl}/capture/${id}`, json, JSON.stringify({ amount: 1000 })) },
  };
  // Warm-up, unmeasured: the JIT, the prepared statements, the pools.
  for (const t of Object.values(targets)) for (const id of await run(300, t.create)) await t.capture(id);

  const snap = async () => {
    const tables = (await db.query<{ relname: string; ins: string; upd: string; hot: string; del: string }>(
      'SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del FROM pg_stat_user_tables')).rows;
    const fns = (await db.query<{ funcname: string; calls: string; self_time: number }>('SELECT funcname, calls, self_time FROM pg_stat_user_functions')).rows;
    const backends = (await db.query<{ pid: number; app: string }>('SELECT pid, application_name AS app FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')).rows;
    const lsn = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn() AS lsn')).rows[0]!.lsn;
    return { tables, fns, backends: backends.map((b) => ({ ...b, app: b.app === 'payd' || b.app === 'probe' ? b.app : 'baseline', cpu: cpuTotalMs(b.pid) })), lsn, logSize: statSync(LOG).size };
  };
  const readLog = (from: number, to: number) => {
    const fd = openSync(LOG, 'r');
    const buf = Buffer.alloc(to - from);
    readSync(fd, buf, 0, to - from, from);
    closeSync(fd);
    return buf.toString('utf8');
  };
  const settle = () => new Promise((r) => setTimeout(r, SETTLE));

  for (const phase of (process.env.BENCH_PHASES ?? 'create,capture').split(',') as Array<'create' | 'capture'>) {
    const ids: Record<string, string[]> = {};
    if (phase === 'capture') for (const [name, t] of Object.entries(targets)) { ids[name] = await run(N, t.create); }
    await settle();
    for (const [name, t] of Object.entries(targets)) {
      const before = await snap();
      const cpu0 = cpuTotalMs(t.pid);
      const t0 = Date.now();
      await run(N, phase === 'create' ? t.create : (i) => t.capture(ids[name]![i]!));
      const ms = Date.now() - t0;
      const cpu1 = cpuTotalMs(t.pid);
      // The backends now (a pool may close idle ones while the phase settles).
      const mid = await snap();
      await settle();
      const after = await snap();
      // Backends of this target (application_name), CPU per request.
      let dbCpu = 0;
      for (const b of mid.backends) if (b.app === t.app) dbCpu += b.cpu - (before.backends.find((x) => x.pid === b.pid)?.cpu ?? 0);
      const pids = new Set([...mid.backends, ...after.backends].filter((b) => b.app === t.app).map((b) => String(b.pid)));
            // Statements by text (the log's "execute <name>: <text>" or "statement: <text>").
      const counts = new Map<string, number>();
      let total = 0;
      for (const line of readLog(before.logSize, after.logSize).split('\n')) {
        const m = /^\S+ \S+ UTC \[(\d+)\] \S+@(\S+) LOG: {2}(?:execute [^:]*|statement): (.*)$/.exec(line);
        if (!m || m[2] !== dbName || !pids.has(m[1]!)) continue;
        const text = m[3]!.replace(/\s+/g, ' ').slice(0, 140);
        counts.set(text, (counts.get(text) ?? 0) + 1);
        total += 1;
      }
      // WAL of this database's transactions in the window.
      const wal = (await db.query<{ bytes: string; recs: string; fpi: string }>(`
        WITH r AS (SELECT * FROM pg_get_wal_records_info($1, $2)),
             x AS (SELECT DISTINCT xid FROM r WHERE block_ref LIKE '%/' || $3 || '/%' AND xid <> 0)
        SELECT sum(record_length)::bigint AS bytes, count(*)::bigint AS recs, sum(fpi_length)::bigint AS fpi FROM r
         WHERE xid IN (SELECT xid FROM x) OR (xid = 0 AND block_ref LIKE '%/' || $3 || '/%')`, [before.lsn, after.lsn, oid])).rows[0]!;
      console.log(`\n== ${phase} (${name}): ${N} requests in ${ms} ms at ${C} clients; process CPU ${((cpu1 - cpu0) * 1000 / N).toFixed(0)} µs/request, its backends ${(dbCpu * 1000 / N).toFixed(0)} µs/request`);
      console.log(`   WAL (this database's transactions): ${(Number(wal.bytes) / N).toFixed(0)} B/request, ${(Number(wal.recs) / N).toFixed(1)} records, full-page images ${(Number(wal.fpi) / N).toFixed(0)} B`);
      console.log(`   statements: ${(total / N).toFixed(2)} per request`);
      for (const [text, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`     ${(n / N).toFixed(3)}  ${text}`);
      for (const a of after.tables) {
        const b = before.tables.find((x) => x.relname === a.relname);
        const d = (k: 'ins' | 'upd' | 'hot' | 'del') => (Number(a[k]) - Number(b?.[k] ?? 0)) / N;
        if (d('ins') || d('upd') || d('del')) console.log(`   table ${a.relname.padEnd(32)} ins ${d('ins').toFixed(2)} upd ${d('upd').toFixed(2)} (hot ${d('hot').toFixed(2)}) del ${d('del').toFixed(2)}`);
      }
      for (const a of after.fns) {
        const b = before.fns.find((x) => x.funcname === a.funcname);
        const calls = Number(a.calls) - Number(b?.calls ?? 0);
        if (calls) console.log(`   function ${a.funcname.padEnd(36)} ${(calls / N).toFixed(2)} calls, ${((a.self_time - (b?.self_time ?? 0)) * 1000 / N).toFixed(0)} µs self per request`);
      }
    }
  }
} finally {
  for (const s of stops.reverse()) await s().catch(() => {});
  await db.end().catch(() => {});
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
