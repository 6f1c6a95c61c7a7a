import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config.ts';
import type { Db } from './db.ts';
import { createPgDb } from './pg.ts';

export type { Db, Queryable, QueryResult, Row } from './db.ts';

/** PostgreSQL when DATABASE_URL is set, otherwise PGlite persisted under the data dir. */
export async function openDb(config: Pick<Config, 'databaseUrl' | 'dbPoolSize' | 'dataDir'>): Promise<Db> {
  if (config.databaseUrl) return createPgDb(config.databaseUrl, config.dbPoolSize);
  const dir = path.join(config.dataDir, 'pgdata');
  mkdirSync(dir, { recursive: true });
  // Imported only when used: loading PGlite costs ~50 MB of memory.
  const { createPgliteDb } = await import('./pglite.ts');
  return createPgliteDb({ dataDir: dir });
}
