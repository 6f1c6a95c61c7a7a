import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Db } from './db.ts';
import { createPgDb, type PgDbOptions } from './pg.ts';
import { lockEmbedded } from './embedded-lock.ts';
export { EmbeddedDbBusyError } from './embedded-lock.ts';

export type { Db, Queryable, QueryResult, Row } from './db.ts';
export { customPlan } from './db.ts';

/**
 * PostgreSQL when DATABASE_URL is set, otherwise PGlite persisted under the data dir. A
 * new embedded database starts from the migrated template unless `template` is false
 * (start --no-migrate: loading the template is migrating, which that start must not do).
 */
/** What opening the database needs (config.ts builds it from the environment). */
export interface DbSettings {
  databaseUrl: string | undefined;
  dbPoolSize: number;
  dataDir: string;
  dbTimeouts?: PgDbOptions | undefined;
}

export async function openDb(config: DbSettings, { template = true } = {}): Promise<Db> {
  if (config.databaseUrl) return createPgDb(config.databaseUrl, config.dbPoolSize, config.dbTimeouts);
  const dir = path.join(config.dataDir, 'pgdata');
  mkdirSync(dir, { recursive: true });
  // Before the template or PGlite touch the directory: one process at a time (embedded-lock.ts).
  const unlock = lockEmbedded(config.dataDir);
  // Imported only when used: loading PGlite costs ~50 MB of memory.
  const { createPgliteDb } = await import('./pglite.ts');
  try {
    if (template && !existsSync(path.join(dir, 'PG_VERSION'))) {
      // A new embedded database starts from the migrated template (npm run build) when it fits.
      const { installTemplate } = await import('./pglite-template.ts');
      await installTemplate(dir);
    }
    const db = await createPgliteDb({ dataDir: dir });
    const close = db.close.bind(db);
    db.close = async () => {
      try {
        await close();
      } finally {
        unlock();
      }
    };
    return db;
  } catch (err) {
    unlock();
    throw err;
  }
}
