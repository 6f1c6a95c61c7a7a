// Test databases. On PGlite (default) every call gets a fresh in-memory database
// started from a migrated template (cached on disk per migration checksum, so initdb
// runs once per machine). With DATABASE_URL each call creates its own PostgreSQL
// database on that server and drops it on close.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Db } from '../../src/platform/db/index.ts';
import { createPgDb } from '../../src/platform/db/pg.ts';
import { PGLITE_WAL_SEGMENT_MB, createPgliteDb } from '../../src/platform/db/pglite.ts';
import { type Migration, loadMigrations, migrate } from '../../src/platform/db/migrator.ts';
import { migratedDump } from '../../src/platform/db/pglite-template.ts';
import { waitFor } from './wait.ts';

export interface TestDb {
  db: Db;
  /** Connection string of the test database (PostgreSQL only), for child processes. */
  url: string | undefined;
  close(): Promise<void>;
}

let template: Blob | undefined;

/**
 * The template's bytes, handed to PGlite's loader (loadDataDir) as they are: the loader
 * calls arrayBuffer() once and copies each file into the new database's own file system,
 * so one ArrayBuffer serves every database of this process. A plain Blob would copy its 27
 * MB through Node 20's chunked Blob reader for each database (about 0.1-0.2 s of CPU).
 */
class TemplateBytes extends Blob {
  constructor(private readonly content: ArrayBuffer) {
    super();
  }

  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.content);
  }
}

const asTemplate = (b: Buffer) => new TemplateBytes(b.byteOffset === 0 && b.byteLength === b.buffer.byteLength
  ? b.buffer as ArrayBuffer : b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer);

/** A short hash of the migrations (and of what else made a template), naming a template made from them. */
function migrationsHash(migrations: readonly Migration[], ...made: string[]): string {
  return createHash('sha256').update([...made, ...migrations.map((m) => m.checksum)].join(',')).digest('hex').slice(0, 16);
}

/** The URL of database `name` on the server of `serverUrl`. */
function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function pgliteTemplate(): Promise<Blob> {
  if (template) return template;
  const migrations = loadMigrations();
  // The migrations and how the template is made (an older one on this machine is not reused).
  const made = `checkpointed, WAL segments of ${PGLITE_WAL_SEGMENT_MB} MB, none recycled`;
  const file = path.join(os.tmpdir(), `payd-pglite-template-${migrationsHash(migrations, made)}.tar`);
  if (existsSync(file)) {
    template = asTemplate(readFileSync(file));
    return template;
  }
  const dump = await migratedDump(migrations, 'none');
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(tmp, dump);
  renameSync(tmp, file);
  template = asTemplate(dump);
  return template;
}

/**
 * The migrated template on a PostgreSQL server: `payd_tpl_<hash of the migrations>`, made once
 * (migrations run on a database of a random name, renamed when done, so no copy ever sees a
 * half-migrated one) and copied by CREATE DATABASE ... TEMPLATE, a fifth of a second where
 * running the migrations takes half a second or more. `npm test` drops it when it ends
 * (scripts/run-tests.js); a test run directly leaves it for the next.
 */
function pgTemplateName(): string {
  return `payd_tpl_${migrationsHash(loadMigrations())}`;
}

/** One statement on a connection of its own to `serverUrl`: the server's CREATE, ALTER and DROP DATABASE. */
export async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

async function buildPgTemplate(serverUrl: string, template: string): Promise<void> {
  const building = `payd_tplb_${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${building}`);
  const db = createPgDb(databaseUrl(serverUrl, building), 1);
  try {
    await migrate(db);
  } catch (err) {
    await db.close();
    await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
    throw err;
  }
  await db.close();
  // The pool's backend may still be leaving: RENAME needs the database to itself (55006 until then).
  const renamed = await waitFor(async () => {
    try {
      await adminQuery(serverUrl, `ALTER DATABASE ${building} RENAME TO ${template}`);
      return 'renamed';
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === '55006') return undefined;
      if (code === '42P04') return 'made by another process';
      throw err;
    }
  }, { every: 20, what: `the template's migrating session to leave ${building}` });
  if (renamed !== 'renamed') await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
}

/** Creates database `name` as a copy of the migrated template, making the template first if needed. */
async function copyOfTemplate(serverUrl: string, name: string): Promise<void> {
  const template = pgTemplateName();
  for (let attempt = 0; ; attempt++) {
    try {
      await adminQuery(serverUrl, `CREATE DATABASE ${name} TEMPLATE ${template}`);
      return;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === '3D000' && attempt < 3) await buildPgTemplate(serverUrl, template);
      else throw err;
    }
  }
}

/** The PostgreSQL server of the fault scenarios, which need one even when the suite runs on PGlite. */
export const POSTGRES_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** A fresh database: PGlite, or one of its own on `serverUrl` (default: DATABASE_URL when set). */
export async function createTestDb(serverUrl = process.env.DATABASE_URL): Promise<TestDb> {
  if (!serverUrl) {
    const db = await createPgliteDb({ loadDataDir: await pgliteTemplate() });
    return { db, url: undefined, close: () => db.close() };
  }
  const name = `payd_t_${randomBytes(6).toString('hex')}`;
  await copyOfTemplate(serverUrl, name);
  const url = databaseUrl(serverUrl, name);
  const db = createPgDb(url, 20);
  return {
    db,
    url,
    async close() {
      await db.close();
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
