// Real payd processes for the tests that run several of them on one database or kill
// them (test/payments/concurrency, crash-recovery, processes, recovery-defects):
//   - startPayd: a process whose output is kept for failure messages, tracked until it
//     stops (stopAll ends whatever a failed test left running);
//   - processDatabase / emptyPgDatabase: the database the processes share, and its removal;
//   - httpClient: JSON calls with a deadline (a killed process must not hang a test);
//   - onboardMerchant: an entity, an API key and a token, each step checked;
//   - poll / waitFor: wait for a state instead of letting time pass.
// Builds on ./server.ts (free ports, the servers' master key, the ServerProcess shape).
// A test that needs one server and inherits its stderr keeps using startServer there.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ADMIN_TOKEN } from './app.ts';
import { createTestDb, type TestDb } from './db.ts';
import { freePort, SERVER_MASTER_KEY, type ServerProcess } from './server.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// ---- processes ----

export interface PaydProcess extends ServerProcess {
  /** The last 4000 characters the process wrote (stdout and stderr): for assertion messages. */
  output(): string;
  /**
   * Sends the signal (default SIGTERM) unless the process has exited already, and resolves
   * with its exit code (null when a signal ended it). SIGKILL follows after 15 s.
   */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartOptions {
  /** How long to wait for /readyz to answer 200 (default 180 s, as startServer: a first start on PGlite migrates). */
  readyWithinMs?: number;
}

const running = new Set<PaydProcess>();

/**
 * Starts `node bin/payd.js start` from the repository root and waits until /readyz
 * answers 200. Defaults: a free port (env.PORT keeps one, and so the token issuer, across
 * restarts), PAYD_BASE_URL on that port, the test admin token, SERVER_MASTER_KEY, no demo
 * data, LOG_LEVEL=warn; env overrides any of them. Fails with the process's output if it
 * exits first or is not ready in time (then it is killed).
 */
export async function startPayd(env: Record<string, string>, options: StartOptions = {}): Promise<PaydProcess> {
  const readyWithinMs = options.readyWithinMs ?? 180_000;
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const base = `http://127.0.0.1:${port}`;
  let out = '';
  const child = spawn(process.execPath, ['bin/payd.js', 'start'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), HOST: '127.0.0.1', PORT: String(port), PAYD_BASE_URL: base,
      PAYD_ADMIN_TOKEN: ADMIN_TOKEN, PAYD_MASTER_KEY: SERVER_MASTER_KEY, PAYD_DEMO: '0', LOG_LEVEL: 'warn', ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
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
  const deadline = Date.now() + readyWithinMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`payd exited with ${child.exitCode} before it was ready:\n${out}`);
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) return proc;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      await proc.stop('SIGKILL');
      throw new Error(`payd was not ready within ${readyWithinMs / 1000} s:\n${out}`);
    }
    await sleep(100);
  }
}

/** The processes startPayd started that have not been stopped through stop(), oldest first. */
export function runningProcesses(): PaydProcess[] {
  return [...running];
}

/** Stops every process still running (one after the other) with the signal; for after() hooks. */
export async function stopAll(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  for (const p of runningProcesses()) await p.stop(signal);
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
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return { url: u.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

// ---- HTTP ----

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

// ---- waiting for a state ----

/**
 * Reads until done(value) holds, everyMs apart, for at most withinMs (default 20 s, every
 * 50 ms); returns the last value read either way, so that the caller's own assertions on
 * it decide (and fail with their messages).
 */
export async function poll<T>(read: () => Promise<T>, done: (value: T) => boolean, options: { withinMs?: number; everyMs?: number } = {}): Promise<T> {
  const deadline = Date.now() + (options.withinMs ?? 20_000);
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(options.everyMs ?? 50);
  }
}

/** Waits for a state: polls (every 50 ms) until check returns a value other than undefined or false, or fails naming `what` after boundMs. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, boundMs = 20_000): Promise<T> {
  const v = await poll(check, (x) => x !== undefined && x !== false, { withinMs: boundMs });
  if (v === undefined || v === false) throw new Error(`timed out waiting for ${what}`);
  return v;
}
