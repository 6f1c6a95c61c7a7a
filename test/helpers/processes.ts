// The one way tests start payd as a process (`node bin/payd.js ...`), and what goes with it:
//   - startPayd: a server (`start`, or other args), ready when /readyz answers 200, its
//     output kept for failure messages (and for tests that read its logs), tracked until it
//     stops (stopAll ends whatever a failed test left running);
//   - runPayd / assertOneLine: a command run to its end (migrate, start-up errors);
//   - processDatabase / emptyPgDatabase / emptyPlace: where the processes keep their data;
//   - call / httpClient: JSON calls (httpClient with a deadline: a killed process must not hang a test);
//   - onboard / onboardMerchant: an entity, an API key and a token, each step checked;
//   - freePort, SERVER_MASTER_KEY: a port, and the master key every process of a test run shares.
// Waiting for a state: ./wait.ts (poll and waitFor are re-exported here).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../../src/platform/db/index.ts';
import { createPgDb } from '../../src/platform/db/pg.ts';
import { createPgliteDb } from '../../src/platform/db/pglite.ts';
import { ADMIN_TOKEN } from './app.ts';
import { adminQuery, createTestDb, type TestDb } from './db.ts';
import { poll, waitFor } from './wait.ts';

export { poll, waitFor };

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** The master key of the processes a test file starts (a restart on the same data keeps it). */
export const SERVER_MASTER_KEY = randomBytes(32).toString('base64');

// ---- processes ----

export interface PaydProcess {
  base: string;
  child: ChildProcess;
  /** What the process wrote so far (stdout and stderr), for assertion messages and log checks. */
  output(): string;
  /**
   * Sends the signal (default SIGTERM) unless the process has exited already, and resolves
   * with its exit code (null when a signal ended it). SIGKILL follows after 15 s.
   */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartOptions {
  /** How long to wait for /readyz to answer 200 (default 180 s: a first start on PGlite migrates). */
  readyWithinMs?: number;
  /** The command's arguments (default ['start']). */
  args?: string[];
  /** Receives the server's stdout lines (its log records) as they come. */
  logs?: string[];
  /**
   * Only PATH, HOME, PORT and env: payd's own defaults for the rest (base URL, demo merchant,
   * no operator token, master key in the data dir, LOG_LEVEL info, HOST 0.0.0.0), as `npm start` runs it.
   */
  bare?: boolean;
}

const running = new Set<PaydProcess>();

/**
 * Starts `node bin/payd.js start` (or options.args) from the repository root and waits until /readyz
 * answers 200. Defaults: a free port (env.PORT keeps one, and so the token issuer, across
 * restarts), PAYD_BASE_URL on that port, the test admin token, SERVER_MASTER_KEY, no demo
 * data, LOG_LEVEL=warn (none of these but the port with options.bare); env overrides any of them. Fails with the process's output if it
 * exits first or is not ready in time (then it is killed).
 */
export async function startPayd(env: Record<string, string>, options: StartOptions = {}): Promise<PaydProcess> {
  const readyWithinMs = options.readyWithinMs ?? 180_000;
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const base = `http://127.0.0.1:${port}`;
  let out = '';
  const child = spawn(process.execPath, ['bin/payd.js', ...(options.args ?? ['start'])], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), PORT: String(port),
      ...(options.bare ? {} : { HOST: '127.0.0.1', PAYD_BASE_URL: base, PAYD_ADMIN_TOKEN: ADMIN_TOKEN, PAYD_MASTER_KEY: SERVER_MASTER_KEY, PAYD_DEMO: '0', LOG_LEVEL: 'warn' }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let rest = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    if (options.logs) {
      const lines = (rest + d.toString()).split('\n');
      rest = lines.pop()!;
      options.logs.push(...lines);
    }
  });
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const tail = () => out.slice(-4000);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const proc: PaydProcess = {
    base,
    child,
    output: () => out,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(timer);
      running.delete(proc);
      return code;
    },
  };
  running.add(proc);
  const state = await poll(async () => {
    if (child.exitCode !== null) return 'exited';
    try {
      return (await fetch(`${base}/readyz`)).status === 200 ? 'ready' : 'starting';
    } catch {
      return 'starting'; // not listening yet
    }
  }, (s) => s !== 'starting', { withinMs: readyWithinMs, everyMs: 100 });
  if (state === 'ready') return proc;
  if (state === 'exited') throw new Error(`payd exited with ${child.exitCode} before it was ready:\n${tail()}`);
  await proc.stop('SIGKILL');
  throw new Error(`payd was not ready within ${readyWithinMs / 1000} s:\n${tail()}`);
}

/** The processes startPayd started that have not been stopped through stop(), oldest first. */
export function runningProcesses(): PaydProcess[] {
  return [...running];
}

/** Stops every process still running (one after the other) with the signal; for after() hooks. */
export async function stopAll(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  for (const p of runningProcesses()) await p.stop(signal);
}

// ---- commands run to their end ----

export interface Run { code: number | null; stdout: string; stderr: string }

/** Runs `node bin/payd.js ...args` to its end (bounded: 60 s) with a clean environment. */
export function runPayd(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/payd.js', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', LOG_LEVEL: 'warn', PAYD_DEMO: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`payd ${args.join(' ')} did not exit within 60 s; stderr: ${stderr}`));
    }, 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      // Let the pipes drain.
      setImmediate(() => resolve({ code, stdout, stderr }));
    });
  });
}

/** A start-up error as payd gives it: exit code 2, one line on stderr starting "payd: ", no stack. */
export function assertOneLine(run: Run, pattern: RegExp): void {
  assert.equal(run.code, 2, `exit code 2; stderr: ${run.stderr}`);
  const lines = run.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${run.stderr}`);
  assert.match(lines[0]!, /^payd: /);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
}

// ---- databases ----

export interface ProcessDatabase {
  /** With DATABASE_URL: the test's own migrated PostgreSQL database (read the ledger through it); else undefined. */
  testDb: TestDb | undefined;
  /** A temporary directory: the PGlite data directory of the processes when there is no testDb. */
  dir: string;
  /** What tells a process where its data is: DATABASE_URL, or PAYD_DATA_DIR (which outlives each process). */
  env: Record<string, string>;
  /** Drops the database and removes the directory; stop the processes first. */
  close(): Promise<void>;
}

/** Where processes keep their data: a PostgreSQL database of their own when DATABASE_URL is set, else a PGlite data directory. */
export async function processDatabase(dirPrefix: string): Promise<ProcessDatabase> {
  const dir = mkdtempSync(path.join(os.tmpdir(), dirPrefix));
  const testDb = process.env.DATABASE_URL ? await createTestDb() : undefined;
  return {
    testDb,
    dir,
    env: testDb?.url ? { DATABASE_URL: testDb.url } : { PAYD_DATA_DIR: dir },
    async close() {
      await testDb?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface PgDatabase {
  /** Connection string of the database, for DATABASE_URL. */
  url: string;
  /** Drops it, ending the connections still open to it. */
  drop(): Promise<void>;
}

/** A new, empty (unmigrated) database on the PostgreSQL server of serverUrl: the first process migrates it. */
export async function emptyPgDatabase(serverUrl: string, namePrefix = 'payd_p_'): Promise<PgDatabase> {
  const name = `${namePrefix}${randomBytes(5).toString('hex')}`;
  const admin = (sql: string) => adminQuery(serverUrl, sql);
  await admin(`CREATE DATABASE ${name}`);
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return { url: u.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** An empty database: a fresh PostgreSQL database (with DATABASE_URL), or a PGlite data dir path not yet created. */
export interface Place {
  env: Record<string, string>;
  /** Opens the database the way payd would (for setting up and inspecting). */
  open(): Promise<Db>;
  /** Nothing was created: no data dir (PGlite) or no table at all (PostgreSQL). */
  untouched(): Promise<boolean>;
  close(): Promise<void>;
}

/** For the start-up tests: a place nothing was created in yet (the first command decides what happens there). */
export async function emptyPlace(): Promise<Place> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'payd-startup-'));
  const dataDir = path.join(dir, 'data');
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    return {
      env: { PAYD_DATA_DIR: dataDir },
      open: () => {
        mkdirSync(path.join(dataDir, 'pgdata'), { recursive: true });
        return createPgliteDb({ dataDir: path.join(dataDir, 'pgdata') });
      },
      untouched: async () => !existsSync(dataDir),
      async close() { rmSync(dir, { recursive: true, force: true }); },
    };
  }
  const pgDb = await emptyPgDatabase(serverUrl, 'payd_t_');
  return {
    env: { DATABASE_URL: pgDb.url, PAYD_DATA_DIR: dataDir },
    open: async () => createPgDb(pgDb.url, 2),
    async untouched() {
      const db = createPgDb(pgDb.url, 1);
      try {
        const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
        return rows[0]!.n === 0 && !existsSync(dataDir);
      } finally {
        await db.close();
      }
    },
    async close() {
      rmSync(dir, { recursive: true, force: true });
      await pgDb.drop();
    },
  };
}

/** The migration versions applied to the place's database. */
export async function appliedVersions(p: Place): Promise<number[]> {
  const db = await p.open();
  try {
    const { rows } = await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    return rows.map((r) => r.version);
  } finally {
    await db.close();
  }
}

// ---- HTTP ----

/** JSON in (a string body is sent as it is), {status, headers, body} out; no deadline (see httpClient). */
export async function call(base: string, method: string, url: string, headers: Record<string, string> = {}, body?: unknown): Promise<Answer> {
  const res = await fetch(base + url, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, any>) : undefined };
}

export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, any> | undefined;
}

export type Call = (base: string, method: string, url: string, headers?: Record<string, string>, body?: unknown) => Promise<Answer>;

/** JSON in, {status, headers, body} out; a call not answered within timeoutMs rejects (as does a lost connection). */
export function httpClient(timeoutMs: number): Call {
  return async (base, method, url, headers = {}, body) => {
    const res = await fetch(base + url, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, any>) : undefined };
  };
}

/**
 * Onboards a merchant through the operator API, asserting each step: the entity is
 * created on `base` (201), its API key on `keysVia` (201, default base), and the token is
 * issued there (200). Returns the entity and its bearer header.
 */
export async function onboardMerchant(base: string, options: { name: string; keysVia?: string; timeoutMs?: number }): Promise<{ entityId: string; auth: { authorization: string } }> {
  const call = httpClient(options.timeoutMs ?? 20_000);
  const keysVia = options.keysVia ?? base;
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const e = await call(base, 'POST', '/admin/v1/entities', admin, { name: options.name });
  assert.equal(e.status, 201, JSON.stringify(e.body));
  const k = await call(keysVia, 'POST', `/admin/v1/entities/${e.body!.id}/api-keys`, admin);
  assert.equal(k.status, 201, JSON.stringify(k.body));
  const tok = await fetch(`${keysVia}/oauth/token`, {
    method: 'POST', headers: { 'x-api-key': k.body!.api_key, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials',
  });
  assert.equal(tok.status, 200);
  return { entityId: e.body!.id as string, auth: { authorization: `Bearer ${((await tok.json()) as { access_token: string }).access_token}` } };
}

/** onboardMerchant with the name "Process test". */
export function onboard(base: string): Promise<{ entityId: string; auth: { authorization: string } }> {
  return onboardMerchant(base, { name: 'Process test' });
}
