// PostgreSQL adapter on node-postgres with a pool.
import net from 'node:net';
import pg from 'pg';
import { type Db, type Queryable, type QueryResult, INT8_OID, parseInt8 } from './db.ts';
import { DatabaseUnavailableError, isConnectionFailure, toDbError } from './errors.ts';
import { RowGate } from './row-gate.ts';
import { PrimaryChoice, ReadOnlyHostError, describeHost, splitHosts } from './hosts.ts';

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
 * PostgreSQL ends a statement of payd's sessions after this long (statement_timeout,
 * PAYD_DB_STATEMENT_TIMEOUT_MS: SQLSTATE 57014, answered 503). The client gives up a
 * little later by itself (StatementWatch: the server did not answer, e.g. the network
 * path died), cancels the statement on the server and discards the connection. Scripts
 * (exec: migrations) have no limit on the client, nor on the server while migrating
 * (withAdvisoryLock lifts the session's limits).
 */
export const QUERY_TIMEOUT_MS = 30_000;
/** How long a statement waits for a row lock (lock_timeout, PAYD_DB_LOCK_TIMEOUT_MS): then 55P03, answered 409 resource-busy. */
export const LOCK_TIMEOUT_MS = 2000;
/**
 * PostgreSQL ends a payd session idle inside a transaction for this long
 * (idle_in_transaction_session_timeout, PAYD_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS): payd
 * never waits for anything but its own CPU between the statements of a transaction, so
 * only a frozen or stalled process gets there, and its row locks are released; its
 * transaction is rolled back and its next statement fails as a lost connection.
 */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;

/** The client's own limit on a statement: PostgreSQL's, plus a margin so that the server's normally acts first. */
export function clientLimitMs(statementTimeoutMs: number): number {
  return statementTimeoutMs + Math.min(1000, Math.ceil(statementTimeoutMs / 4));
}

/**
 * Cancels the statement running on client's backend: a CancelRequest on a connection of
 * its own (the protocol's way, what pg_cancel_backend does), which needs neither a free
 * connection of the pool nor the stuck one. Fire and forget; bounded by the connect timeout.
 */
export function cancelBackend(client: pg.Client): void {
  const c = client as unknown as { processID: number | null; secretKey: number | null; host: string; port: number };
  if (c.processID === null || c.secretKey === null || typeof c.processID !== 'number' || typeof c.secretKey !== 'number') return;
  const socket = c.host?.startsWith('/') ? net.connect(`${c.host}/.s.PGSQL.${c.port}`) : net.connect(c.port, c.host);
  socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy());
  socket.on('error', () => {});
  socket.on('connect', () => {
    const msg = Buffer.alloc(16);
    msg.writeInt32BE(16, 0);
    msg.writeInt32BE(80877102, 4); // the CancelRequest code
    msg.writeInt32BE(c.processID!, 8);
    msg.writeInt32BE(c.secretKey!, 12);
    socket.end(msg);
  });
}

/**
 * The statements running past their limit, with one timer for all of them: a timer per
 * statement (node-postgres's query_timeout) cost about 15 µs of CPU per statement
 * (a CPU profile of payd start under the pair flow, kept in git history). Each statement is noted with its start; a sweep
 * every second (while any runs) cancels the statement of a client older than the limit
 * on the server (cancelBackend: else its backend would go on running or waiting for a
 * lock after the socket is gone, and such backends pile up, a pool's worth per limit),
 * then destroys the connection, which fails the statement as node-postgres's own timeout
 * did ("Query read timeout", a connection failure: DatabaseUnavailableError) and gets
 * the client discarded.
 */
class StatementWatch {
  /** Per client, the start of each statement given to it, oldest first (a client runs them in order). */
  private readonly started = new Map<pg.Client, number[]>();
  private timer: NodeJS.Timeout | undefined;
  private readonly sweepMs: number;

  constructor(private readonly limitMs: number) {
    this.sweepMs = Math.min(1000, Math.max(10, Math.floor(limitMs / 4)));
  }

  start(client: pg.Client): void {
    const list = this.started.get(client);
    if (list) list.push(Date.now());
    else this.started.set(client, [Date.now()]);
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.sweep(), this.sweepMs);
      this.timer.unref();
    }
  }

  end(client: pg.Client): void {
    const list = this.started.get(client);
    if (!list) return;
    list.shift();
    if (list.length === 0) this.started.delete(client);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [client, list] of this.started) {
      if (now - list[0]! < this.limitMs) continue;
      this.started.delete(client);
      cancelBackend(client);
      client.connection.stream.destroy(new Error('Query read timeout'));
    }
    if (this.started.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/** Capped exponential backoff with jitter, for reconnect loops: attempt 0, 1, 2, ... */
export function backoffMs(attempt: number, baseMs = 250, capMs = 5000): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 20));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}

/** The statement as node-postgres takes it: named (prepared once per connection) when it has parameters. */
function statement(sql: string, params: readonly unknown[]): pg.QueryConfig {
  const name = params.length ? statementName(sql) : undefined;
  return name ? { name, text: sql, values: params as unknown[] } : { text: sql, values: params as unknown[] };
}

/**
 * A statement on `client`, watched (StatementWatch). onFailure learns of connection-level
 * failures (the connection must then be discarded).
 */
async function run<T>(client: pg.PoolClient, watch: StatementWatch, sql: string, params: readonly unknown[], onFailure: (err: unknown) => void): Promise<QueryResult<T>> {
  watch.start(client);
  try {
    const res = await client.query(statement(sql, params));
    return { rows: res.rows as T[], rowCount: res.rowCount ?? res.rows.length };
  } catch (err) {
    return failed(err, onFailure);
  } finally {
    watch.end(client);
  }
}

/** The error to throw for a statement that failed; a connection failure is reported to onFailure first. */
function failed(err: unknown, onFailure: (err: unknown) => void): never {
  const e = toDbError(err);
  if (e instanceof DatabaseUnavailableError) onFailure(err);
  throw e;
}

/** onFailure learns of connection-level failures (the connection must then be discarded). */
function wrap(client: pg.PoolClient, watch: StatementWatch, onFailure: (err: unknown) => void): Queryable {
  return {
    query: <T>(sql: string, params: readonly unknown[] = []) => run<T>(client, watch, sql, params, onFailure),
    async exec(sql: string): Promise<void> {
      try {
        await client.query(sql);
      } catch (err) {
        failed(err, onFailure);
      }
    },
  };
}

/**
 * The Client class of the pool and the listeners. With one host, node-postgres's own
 * with an error listener (HeardClient), which sets the session's limits (`setup`: SET
 * statements, not startup parameters, which PgBouncer refuses) once connected. With
 * several (hosts.ts), a client connects to the current choice, checks that it takes
 * writes, and reports a refusal or a read-only host so that the next client tries the
 * next host. pg-pool calls connect with a callback; others await it.
 */
function clientClass(choice: PrimaryChoice, setup: string, heard: (client: pg.Client, err: unknown) => void): typeof pg.Client {
  /**
   * Every client has an error listener for its whole life, from its construction: pg-pool
   * listens only while a client is idle, and a terminated backend's error can arrive when
   * nobody else listens (in the same network read that completed a statement: the
   * check of a new connection below, or the previous holder's last statement). Unheard,
   * it would kill the process.
   */
  class HeardClient extends pg.Client {
    protected target: string | undefined;
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      this.on('error', (err) => heard(this as unknown as pg.Client, err));
    }
    // One override for both of pg.Client's connect signatures (hence the expect-error).
    // @ts-expect-error: the callback form returns nothing
    override connect(callback?: (err: Error | null) => void): Promise<void> | undefined {
      const done = (async () => {
        try {
          await super.connect();
          if (this.target !== undefined) {
            const res = await super.query('SHOW transaction_read_only');
            if ((res.rows[0] as { transaction_read_only?: string } | undefined)?.transaction_read_only !== 'off') {
              throw new ReadOnlyHostError(describeHost(this.target));
            }
          }
          await super.query(setup);
        } catch (err) {
          if (this.target !== undefined && (err instanceof ReadOnlyHostError || isConnectionFailure(err))) choice.failed(this.target);
          await this.end().catch(() => {});
          throw err;
        }
      })();
      if (!callback) return done;
      done.then(() => callback(null), (err: Error) => callback(err));
      return undefined;
    }
  }
  if (!choice.multi) return HeardClient as unknown as typeof pg.Client;
  class PrimaryClient extends HeardClient {
    constructor(config?: pg.ClientConfig) {
      const target = choice.current();
      super({ ...config, connectionString: target });
      this.target = target;
    }
  }
  return PrimaryClient as unknown as typeof pg.Client;
}

export interface PgDbOptions {
  /** A statement's limit (QUERY_TIMEOUT_MS); tests set a short one. */
  statementTimeoutMs?: number;
  /** A row lock's wait (LOCK_TIMEOUT_MS). (A turn on a busy row, onRow, is awaited at most the client's statement limit.) */
  lockTimeoutMs?: number;
  /** A session idle in a transaction is ended after this long (IDLE_IN_TRANSACTION_TIMEOUT_MS). */
  idleInTransactionTimeoutMs?: number;
}

/** The SET statements of a payd session's limits (0: none). */
function sessionSetup(statementMs: number, lockMs: number, idleMs: number): string {
  const ms = (n: number) => Math.max(0, Math.floor(n));
  return `SET statement_timeout = ${ms(statementMs)}; SET lock_timeout = ${ms(lockMs)}; SET idle_in_transaction_session_timeout = ${ms(idleMs)}`;
}

/** The session without limits: a migration may run long, and waits for the migration lock as long as another process migrates. */
const NO_LIMITS = sessionSetup(0, 0, 0);

export function createPgDb(connectionString: string, poolSize: number, opts: PgDbOptions = {}): Db {
  const choice = new PrimaryChoice(splitHosts(connectionString));
  const statementTimeoutMs = opts.statementTimeoutMs ?? QUERY_TIMEOUT_MS;
  const lockTimeoutMs = opts.lockTimeoutMs ?? LOCK_TIMEOUT_MS;
  const setup = sessionSetup(statementTimeoutMs, lockTimeoutMs, opts.idleInTransactionTimeoutMs ?? IDLE_IN_TRANSACTION_TIMEOUT_MS);
  // The first error of each client is kept (clientClass): its holder then discards it.
  const clientErrors = new WeakMap<pg.Client, unknown>();
  const Client = clientClass(choice, setup, (client, err) => {
    if (!clientErrors.has(client)) clientErrors.set(client, err ?? new Error('connection error'));
  });
  const pool = new pg.Pool({
    connectionString: choice.current(),
    Client,
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
  /**
   * A client of the pool. With several hosts, a refused or read-only host moves the choice
   * on (PrimaryClient), and the next host is tried at once, each host at most once: a
   * start-up or a request after a failover finds the primary instead of failing first.
   */
  async function checkout(): Promise<pg.PoolClient> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await pool.connect();
      } catch (err) {
        if (!choice.multi || attempt >= choice.urls.length || !isConnectionFailure(err)) throw toDbError(err);
      }
    }
  }
  const watch = new StatementWatch(clientLimitMs(statementTimeoutMs));
  // One statement or transaction at a time per busy row waits for its lock; the others
  // wait their turn in memory, not on a connection (row-gate.ts). A turn is never longer
  // than a statement may run.
  const gate = new RowGate(clientLimitMs(statementTimeoutMs));

  /**
   * A client that heard no error before it was handed over: one that did (its backend
   * terminated while it was idle or being checked) has sent nothing for this caller, so
   * it is discarded and another taken, at most as many times as the pool holds clients.
   */
  async function healthyClient(): Promise<pg.PoolClient> {
    let client = await checkout();
    for (let discarded = 0; clientErrors.has(client) && discarded < poolSize; discarded++) {
      const err = clientErrors.get(client);
      client.release(err instanceof Error ? err : true);
      client = await checkout();
    }
    return client;
  }

  /** Gives a client back to the pool, or discards it after a connection failure. */
  function release(client: pg.PoolClient, failure: unknown): void {
    client.release(failure === undefined ? undefined : failure instanceof Error ? failure : true);
  }

  // Statements outside a transaction: one client each, as pool.query does. (The statement
  // of a request: its own path, without withClient's closures and Queryable.)
  const root: Queryable = {
    async query<T>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<T>> {
      const client = await healthyClient();
      let failure: unknown = clientErrors.get(client);
      try {
        return await run<T>(client, watch, sql, params, (err) => {
          failure ??= err ?? new Error('connection error');
        });
      } finally {
        release(client, failure ?? clientErrors.get(client));
      }
    },
    exec: (sql) => withClient((_client, conn) => conn.exec(sql)),
  };

  /**
   * Runs fn on a checked-out client, discarded (not returned to the pool) after a
   * connection failure: a statement that failed so, or an error event (a terminated
   * backend emits one between two statements).
   */
  async function withClient<T>(fn: (client: pg.PoolClient, conn: Queryable, broken: () => boolean) => Promise<T>): Promise<T> {
    const client = await healthyClient();
    let failure: unknown = clientErrors.get(client);
    const onFailure = (err: unknown) => {
      failure ??= err ?? new Error('connection error');
    };
    const broken = () => {
      failure ??= clientErrors.get(client);
      return failure !== undefined;
    };
    try {
      return await fn(client, wrap(client, watch, onFailure), broken);
    } finally {
      release(client, broken() ? failure : undefined);
    }
  }

  return {
    kind: 'pg',
    query: root.query,
    exec: root.exec,
    poolStats: () => ({ max: poolSize, open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    onRow: (key, fn) => gate.run(key, fn),
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
        // Waiting for the lock (another process migrating) and what runs under it
        // (migrations) take as long as they take; the session's limits are set again after.
        await conn.exec(NO_LIMITS);
        try {
          await conn.query('SELECT pg_advisory_lock($1)', [key]);
          try {
            return await fn(conn);
          } finally {
            // A lost connection took its session lock with it.
            if (!broken()) await conn.query('SELECT pg_advisory_unlock($1)', [key]);
          }
        } finally {
          if (!broken()) await conn.exec(setup);
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
      // With several hosts, each is tried once before the attempt counts as failed.
      const attempt = async (): Promise<void> => {
        for (let i = 1; ; i++) {
          const last = !choice.multi || i >= choice.urls.length;
          try {
            return await attemptOne(last);
          } catch (err) {
            if (last || !isConnectionFailure(err) || stopped) throw err;
          }
        }
      };
      // last: a failure to connect schedules the next attempt (else the caller tries the next host).
      const attemptOne = async (last: boolean): Promise<void> => {
        const c = new Client({ connectionString: choice.current(), connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true, application_name: 'payd' });
        let settled = false;
        let listening = false;
        const lost = () => {
          if (settled) return;
          settled = true;
          c.removeAllListeners('notification');
          c.end().catch(() => {});
          if (client === c) client = undefined;
          if (stopped || (!listening && !last)) return;
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
          listening = true;
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
