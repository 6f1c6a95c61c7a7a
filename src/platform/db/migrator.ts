// Applies migrations/NNNN_name.sql in order, each in its own transaction, under an
// advisory lock so that several processes starting together apply each one once.
// An applied migration must never change: its checksum is recorded and verified.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.ts';

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../migrations');
const LOCK_KEY = 0x7061_7964; // "payd"

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

export async function migrate(db: Db, migrations = loadMigrations()): Promise<number[]> {
  return db.withAdvisoryLock(LOCK_KEY, async (conn) => {
    await conn.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await conn.query<{ version: number; checksum: string }>(
      'SELECT version, checksum FROM schema_migrations',
    );
    const applied = new Map(rows.map((r) => [r.version, r.checksum]));
    const done: number[] = [];
    for (const m of migrations) {
      const checksum = applied.get(m.version);
      if (checksum !== undefined) {
        if (checksum !== m.checksum) {
          throw new Error(`migration ${m.version}_${m.name} was edited after it was applied`);
        }
        continue;
      }
      await conn.exec(`BEGIN;\n${m.sql}\n;INSERT INTO schema_migrations (version, name, checksum) VALUES (${m.version}, '${m.name}', '${m.checksum}');\nCOMMIT;`)
        .catch(async (err: unknown) => {
          await conn.exec('ROLLBACK').catch(() => {});
          throw new Error(`migration ${m.version}_${m.name} failed: ${(err as Error).message}`);
        });
      done.push(m.version);
    }
    return done;
  });
}
