// Shared by the start-up tests: run the real command to its end, check the one-line
// errors, and an empty database to start on (PostgreSQL with DATABASE_URL, else PGlite).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createPgDb } from '../../src/platform/db/pg.ts';
import { createPgliteDb } from '../../src/platform/db/pglite.ts';
import type { Db } from '../../src/platform/db/index.ts';

const SERVER_URL = process.env.DATABASE_URL;

export interface Run { code: number | null; stdout: string; stderr: string }

/** Runs `node bin/payd.js ...args` to its end (bounded) with a clean environment. */
export function payd(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/payd.js', ...args], {
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

export function assertOneLine(run: Run, pattern: RegExp): void {
  assert.equal(run.code, 2, `exit code 2; stderr: ${run.stderr}`);
  const lines = run.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${run.stderr}`);
  assert.match(lines[0]!, /^payd: /);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
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

export async function place(): Promise<Place> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'payd-startup-'));
  const dataDir = path.join(dir, 'data');
  if (!SERVER_URL) {
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
  const name = `payd_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return {
    env: { DATABASE_URL: url.toString(), PAYD_DATA_DIR: dataDir },
    open: async () => createPgDb(url.toString(), 2),
    async untouched() {
      const db = createPgDb(url.toString(), 1);
      try {
        const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
        return rows[0]!.n === 0 && !existsSync(dataDir);
      } finally {
        await db.close();
      }
    },
    async close() {
      rmSync(dir, { recursive: true, force: true });
      const c = new pg.Client({ connectionString: SERVER_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export async function appliedVersions(p: Place): Promise<number[]> {
  const db = await p.open();
  try {
    const { rows } = await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    return rows.map((r) => r.version);
  } finally {
    await db.close();
  }
}

