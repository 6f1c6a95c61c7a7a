// Embedded adapter: PGlite runs PostgreSQL in-process (WASM). One connection, so
// statements and transactions are serialized by PGlite itself. No fsync: for
// evaluation and development only.
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { type Db, type Queryable, type QueryResult, INT8_OID, parseInt8 } from './db.ts';

type Target = PGlite | Transaction;

function wrap(target: Target): Queryable {
  return {
    async query<T>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<T>> {
      const res = await target.query<T>(sql, params as unknown[]);
      return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
    },
    async exec(sql: string): Promise<void> {
      await target.exec(sql);
    },
  };
}

export interface PgliteOptions {
  /** Directory to persist to; in memory when absent. */
  dataDir?: string;
  /** A dump (from dumpPglite) to start from instead of running initdb. */
  loadDataDir?: Blob | File;
}

/**
 * PostgreSQL's shared buffers inside PGlite's WASM memory, all touched at start: its
 * default 128 MB made most of an embedded payd's resident memory (issue 17). 16 MB holds
 * an evaluation database's hot pages; the rest is read through the OS page cache.
 */
export const PGLITE_SHARED_BUFFERS = '16MB';

/**
 * The WAL segment size initdb gives a new embedded database, in MB (PostgreSQL's least; its
 * default is 16). A segment is a whole file from its first record, so with 16 MB a new
 * database starts with 16 MB of mostly empty WAL, which the migrated template carries
 * (dist/pglite-template.tar.gz, the test databases' template) and which PGlite keeps in
 * memory wherever its files live in memory. Databases made before keep their size: it is
 * fixed when initdb runs.
 */
export const PGLITE_WAL_SEGMENT_MB = 1;

export async function createPgliteDb(options: PgliteOptions = {}): Promise<Db & { dump(compression?: 'none' | 'gzip'): Promise<Blob> }> {
  const db = await PGlite.create({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    parsers: { [INT8_OID]: parseInt8 },
    initDbStartParams: [`--wal-segsize=${PGLITE_WAL_SEGMENT_MB}`],
    startParams: [...(PGlite as unknown as { defaultStartParams: string[] }).defaultStartParams, '-c', `shared_buffers=${PGLITE_SHARED_BUFFERS}`],
  });
  const root = wrap(db);
  return {
    kind: 'pglite',
    query: root.query,
    exec: root.exec,
    transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    onRow: (_key, fn) => fn(),
    async withAdvisoryLock(key, fn) {
      await db.query('SELECT pg_advisory_lock($1)', [key]);
      try {
        return await fn(root);
      } finally {
        await db.query('SELECT pg_advisory_unlock($1)', [key]);
      }
    },
    async listen(channel, onMessage) {
      const unsubscribe = await db.listen(channel, onMessage);
      return async () => {
        await unsubscribe();
      };
    },
    async close() {
      await db.close();
    },
    dump: (compression = 'none') => db.dumpDataDir(compression),
  };
}
