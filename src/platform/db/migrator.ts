// Applies migrations/NNNN_name.sql in order, each in its own transaction, under an
// advisory lock so that several processes starting together apply each one once.
// An applied migration must never change: its checksum is recorded and verified.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { packagePath } from '../paths.ts';
import type { Db } from './db.ts';

export const MIGRATIONS_DIR = packagePath('migrations');
const LOCK_KEY = 0x7061_7964; // "payd"

/** The database schema is not the one this payd expects: the operator must act (exit code 2). */
export class SchemaError extends Error {}

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .map((file) => {
      const m = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
      if (!m) throw new Error(`migration file name must look like 0001_name.sql: ${file}`);
      const sql = readFileSync(path.join(dir, file), 'utf8');
      return { version: Number(m[1]), name: m[2]!, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    })
    .sort((a, b) => a.version - b.version);
}

interface AppliedRow {
  version: number;
  name: string;
  checksum: string;
}

async function appliedRows(q: Pick<Db, 'query'>): Promise<AppliedRow[] | undefined> {
  const { rows: [table] } = await q.query<{ present: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS present");
  if (!table?.present) return undefined;
  const { rows } = await q.query<AppliedRow>('SELECT version, name, checksum FROM schema_migrations ORDER BY version');
  return rows;
}

const label = (m: { version: number; name: string }) => `${String(m.version).padStart(4, '0')}_${m.name}`;

/**
 * Reads only (start --no-migrate): the database holds exactly this payd's migrations,
 * same names and checksums; otherwise a SchemaError that says what differs, in one line.
 */
export async function checkSchema(db: Pick<Db, 'query'>, migrations = loadMigrations()): Promise<void> {
  const rows = await appliedRows(db);
  const fix = 'apply them with `payd migrate` as the schema owner, then start again';
  if (rows === undefined) {
    throw new SchemaError(`the database has no payd schema (no schema_migrations table): ${fix}`);
  }
  const byVersion = new Map(rows.map((r) => [r.version, r]));
  const known = new Set(migrations.map((m) => m.version));
  const missing = migrations.filter((m) => !byVersion.has(m.version));
  const edited = migrations.filter((m) => {
    const r = byVersion.get(m.version);
    return r !== undefined && (r.checksum !== m.checksum || r.name !== m.name);
  });
  const unknown = rows.filter((r) => !known.has(r.version));
  if (edited.length) {
    throw new SchemaError(`the database applied other versions of migrations ${edited.map(label).join(', ')} than this payd has (names or checksums differ)`);
  }
  if (unknown.length) {
    throw new SchemaError(`the database has migrations this payd does not know (${unknown.map(label).join(', ')}): start the payd version that applied them`);
  }
  if (missing.length) {
    throw new SchemaError(`the database schema is not current: migrations ${missing.map(label).join(', ')} are not applied; ${fix}`);
  }
}

export async function migrate(db: Db, migrations = loadMigrations()): Promise<number[]> {
  return db.withAdvisoryLock(LOCK_KEY, async (conn) => {
    // Created only when missing, so that a role without CREATE can start on a current schema.
    let rows = await appliedRows(conn);
    if (rows === undefined) {
      await conn.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now())`);
      rows = [];
    }
    const applied = new Map(rows.map((r) => [r.version, r.checksum]));
    const done: number[] = [];
    for (const m of migrations) {
      const checksum = applied.get(m.version);
      if (checksum !== undefined) {
        if (checksum !== m.checksum) {
          throw new SchemaError(`migration ${label(m)} was edited after it was applied`);
        }
        continue;
      }
      await conn.exec(`BEGIN;\n${m.sql}\n;INSERT INTO schema_migrations (version, name, checksum) VALUES (${m.version}, '${m.name}', '${m.checksum}');\nCOMMIT;`)
        .catch(async (err: unknown) => {
          await conn.exec('ROLLBACK').catch(() => {});
          throw new Error(`migration ${m.version}_${m.name} failed: ${(err as Error).message}`, { cause: err });
        });
      done.push(m.version);
    }
    return done;
  });
}
