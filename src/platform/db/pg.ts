// PostgreSQL adapter on node-postgres with a pool.
import pg from 'pg';
import { type Db, type Queryable, type QueryResult, INT8_OID, parseInt8 } from './db.ts';
import { DatabaseUnavailableError, toDbError } from './errors.ts';

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

/** Connecting gives up after this long: a blackholed database answers 503, not never. */
export const CONNECT_TIMEOUT_MS = 5000;
/**
 * A statement with parameters (every repository query) gives up after this long; its
 * connection is then discarded. Without it, a query on a connection whose network path
 * died waits for TCP to give up (minutes). Scripts (exec: migrations) have no limit.
 */
export const QUERY_TIMEOUT_MS = 30_000;

/** Capped exponential backoff with jitter, for reconnect loops: attempt 0, 1, 2, ... */
export function backoffMs(attempt: number, baseMs = 250, capMs = 5000): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 20));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}

/** onFailure learns of connection-level failures (the connection must then be discarded). */
function wrap(client: pg.PoolClient | pg.Pool, onFailure?: (err: unknown) => void): Queryable {
  const fail = (err: unknown): never => {
    const e = toDbError(err);
    if (e instanceof DatabaseUnavailableError) onFailure?.(err);
    throw e;
  };
  return {
    async query<T>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<T>> {
      const name = params.length ? statementName(sql) : undefined;
      try {
        const res = await client.query({ ...(name ? { name } : {}), text: sql, values: params as unknown[], query_timeout: QUERY_TIMEOUT_MS } as pg.QueryConfig);
        return { rows: res.rows as T[], rowCount: res.rowCount ?? res.rows.length };
      } catch (err) {
        return fail(err);
      }
    },
    async exec(sql: string): Promise<void> {
      try {
        await client.query(sql);
      } catch (err) {
        fail(err);
      }
    },
  };
}

export function createPgDb(connectionString: string, poolSize: number): Db {
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    // Shown in pg_stat_activity (unless the URL names another).
    application_name: 'payd',
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client that errors (server restart) must not crash the process; the pool
  // discards it.
  pool.on('error', () => {});
  // Every client has an error listener for its whole life, not only while idle or while
  // checked out: pg-pool removes its idle listener when it hands a client over, and a
  // terminated backend's error can arrive before the new holder listens (the same
  // network read that completed the previous holder's statement). Unheard, it would
  // kill the process. The first error is kept: the holder then discards the client.
  const clientErrors = new WeakMap<pg.Client, unknown>();
  pool.on('connect', (client) => {
    client.on('error', (err) => {
      if (!clientErrors.has(client)) clientErrors.set(client, err ?? new Error('connection error'));
    });
  });
  const root = wrap(pool);

  /**
   * Runs fn on a checked-out client, discarded (not returned to the pool) after a
   * connection failure: a statement that failed so, or an error event (a terminated
   * backend emits one between two statements).
   */
  async function withClient<T>(fn: (client: pg.PoolClient, conn: Queryable, broken: () => boolean) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      throw toDbError(err);
    }
    let failure: unknown = clientErrors.get(client);
    const onFailure = (err: unknown) => {
      failure ??= err ?? new Error('connection error');
    };
    const broken = () => {
      failure ??= clientErrors.get(client);
      return failure !== undefined;
    };
    try {
      return await fn(client, wrap(client, onFailure), broken);
    } finally {
      client.release(!broken() ? undefined : failure instanceof Error ? failure : true);
    }
  }

  return {
    kind: 'pg',
    query: root.query,
    exec: root.exec,
    transaction: (fn) =>
      withClient(async (_client, conn, broken) => {
        await conn.query('BEGIN');
        try {
          const result = await fn(conn);
          await conn.query('COMMIT');
          return result;
        } catch (err) {
          if (!broken()) await conn.query('ROLLBACK').catch(() => {});
          throw toDbError(err);
        }
      }),
    withAdvisoryLock: (key, fn) =>
      withClient(async (_client, conn, broken) => {
        await conn.query('SELECT pg_advisory_lock($1)', [key]);
        try {
          return await fn(conn);
        } finally {
          // A lost connection took its session lock with it.
          if (!broken()) await conn.query('SELECT pg_advisory_unlock($1)', [key]);
        }
      }),
    async listen(channel, onMessage, onLost) {
      if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`bad channel name ${channel}`);
      // One loop per listener: at most one connection (or connection attempt) at a time,
      // and one timer. A failed attempt both rejects and emits 'end'/'error'; `settled`
      // makes it count once.
      let client: pg.Client | undefined;
      let stopped = false;
      let timer: NodeJS.Timeout | undefined;
      let failures = 0;
      const attempt = async (): Promise<void> => {
        const c = new pg.Client({ connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true, application_name: 'payd' });
        let settled = false;
        const lost = () => {
          if (settled) return;
          settled = true;
          c.removeAllListeners('notification');
          c.end().catch(() => {});
          if (client === c) client = undefined;
          if (stopped) return;
          onLost();
          schedule();
        };
        c.on('notification', (n) => {
          if (n.channel === channel) onMessage(n.payload ?? '');
        });
        c.on('error', lost);
        c.on('end', lost);
        try {
          await c.connect();
          await c.query(`LISTEN ${channel}`);
        } catch (err) {
          lost();
          throw toDbError(err);
        }
        if (settled) return;
        if (stopped) {
          settled = true;
          await c.end().catch(() => {});
          return;
        }
        client = c;
        // Notifications sent while no connection listened were missed.
        if (failures > 0) onLost();
        failures = 0;
      };
      const schedule = () => {
        if (stopped || timer) return;
        timer = setTimeout(() => {
          timer = undefined;
          if (!stopped) attempt().catch(() => {});
        }, backoffMs(failures++));
        timer.unref();
      };
      try {
        await attempt();
      } catch (err) {
        // The first attempt fails the caller (startup), without a loop behind it.
        stopped = true;
        clearTimeout(timer);
        throw err;
      }
      return async () => {
        stopped = true;
        clearTimeout(timer);
        await client?.end().catch(() => {});
      };
    },
    async close() {
      await pool.end();
    },
  };
}
