// The Db port: the only way code talks to the database. Two adapters implement it
// (node-postgres for PostgreSQL, PGlite in-process); both speak PostgreSQL.

export type Row = Record<string, unknown>;

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  /** One statement with $1..$n parameters. */
  query<T = Row>(sql: string, params?: readonly unknown[]): Promise<QueryResult<T>>;
  /** A script of several statements, no parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/**
 * Statements that start with this comment are planned for their parameter values on
 * every run (a custom plan): the pg adapter runs them unnamed, where other statements
 * with parameters are named and, after five runs, get PostgreSQL's generic plan. For
 * statements whose best plan depends on the values (the list filters: a rare value reads
 * its few rows from its own index, a common one walks the listing order); their
 * planning costs a little more on each run. docs/decisions.md, "List filters have their
 * own indexes".
 */
export const CUSTOM_PLAN = '/* payd:custom-plan */ ';

/** `sql` to be planned for its values on every run (CUSTOM_PLAN). */
export const customPlan = (sql: string): string => CUSTOM_PLAN + sql;

export interface Db extends Queryable {
  readonly kind: 'pg' | 'pglite';
  /** Runs fn in one transaction (READ COMMITTED): commit when it resolves, rollback when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Runs fn, whose statements or transaction may wait for the row lock named by key (a
   * payment's id), once no other fn of that key runs in this process: a busy row holds
   * one connection of the pool while it is waited for, however many requests want it
   * (row-gate.ts). Throws DatabaseBusyError when the row stays locked past the lock
   * timeout. fn must not call onRow for the same key. PGlite (one connection): fn as is.
   */
  onRow<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /** Runs fn on one connection holding a session-level advisory lock. */
  withAdvisoryLock<T>(key: number, fn: (conn: Queryable) => Promise<T>): Promise<T>;
  /**
   * Subscribes to NOTIFY on a channel. onLost is called when notifications may have been
   * missed (connection lost); the subscription then reconnects by itself.
   */
  listen(channel: string, onMessage: (payload: string) => void, onLost: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
  /** PostgreSQL only: the pool's connections now (open, idle) and the checkouts waiting for one. */
  poolStats?(): PoolStats;
}

export interface PoolStats {
  /** PAYD_DB_POOL_SIZE. */
  max: number;
  /** Connections open (idle or in use). */
  open: number;
  idle: number;
  /** Statements and transactions waiting for a connection (a free one, or one being opened). */
  waiting: number;
}

/** int8 (bigint) columns come back as JS numbers; amounts never approach 2^53. */
export function parseInt8(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`int8 value out of the safe integer range: ${value}`);
  return n;
}

export const INT8_OID = 20;
