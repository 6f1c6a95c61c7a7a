// PostgreSQL adapter on node-postgres with a pool.
import pg from 'pg';
import { type Db, type Queryable, type QueryResult, INT8_OID, parseInt8 } from './db.ts';

// Statements with parameters run as named prepared statements: PostgreSQL parses and
// plans each SQL text once per connection instead of on every call (node-postgres sends
// Parse only the first time a connection sees a name). The names are bounded: past
// MAX_NAMED distinct texts (SQL built with a variable number of rows), the rest run
// unnamed as before.
const MAX_NAMED = 1000;
const names = new Map<string, string>();
function statementName(sql: string): string | undefined {
  let name = names.get(sql);
  if (name === undefined && names.size < MAX_NAMED) {
    name = `payd_${names.size}`;
    names.set(sql, name);
  }
  return name;
}

function wrap(client: pg.PoolClient | pg.Pool): Queryable {
  return {
    async query<T>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<T>> {
      const name = params.length ? statementName(sql) : undefined;
      const res = name
        ? await client.query({ name, text: sql, values: params as unknown[] })
        : await client.query(sql, params as unknown[]);
      return { rows: res.rows as T[], rowCount: res.rowCount ?? res.rows.length };
    },
    async exec(sql: string): Promise<void> {
      await client.query(sql);
    },
  };
}

export function createPgDb(connectionString: string, poolSize: number): Db {
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client that errors (server restart) must not crash the process.
  pool.on('error', () => {});
  const root = wrap(pool);

  return {
    kind: 'pg',
    query: root.query,
    exec: root.exec,
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn(wrap(client));
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async withAdvisoryLock(key, fn) {
      const client = await pool.connect();
      try {
        await client.query('SELECT pg_advisory_lock($1)', [key]);
        try {
          return await fn(wrap(client));
        } finally {
          await client.query('SELECT pg_advisory_unlock($1)', [key]);
        }
      } finally {
        client.release();
      }
    },
    async listen(channel, onMessage, onLost) {
      if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`bad channel name ${channel}`);
      let client: pg.Client | undefined;
      let stopped = false;
      const reconnect = (): void => {
        setTimeout(() => {
          if (!stopped) connect().catch(() => reconnect());
        }, 1000).unref();
      };
      const connect = async (): Promise<void> => {
        const c = new pg.Client({ connectionString });
        c.on('notification', (n) => {
          if (n.channel === channel) onMessage(n.payload ?? '');
        });
        c.on('error', () => {});
        c.on('end', () => {
          if (stopped) return;
          onLost();
          reconnect();
        });
        await c.connect();
        await c.query(`LISTEN ${channel}`);
        client = c;
      };
      await connect();
      return async () => {
        stopped = true;
        await client?.end().catch(() => {});
      };
    },
    async close() {
      await pool.end();
    },
  };
}
