// Connection-level database failures: the database is down, restarting, unreachable,
// out of connections, or dropped our connection. They are not bugs of the request that
// met them: the adapter turns them into DatabaseUnavailableError, which the HTTP error
// handler answers 503 with Retry-After (the client retries, with its idempotency key).
// Errors of the statement itself (constraint violations, syntax) are left as they are.

/** Seconds a client is asked to wait (Retry-After) when the database is unavailable. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

export class DatabaseUnavailableError extends Error {
  /** The code of the underlying failure: a SQLSTATE (57P01) or a socket error (ECONNREFUSED). */
  readonly code: string | undefined;
  constructor(cause: unknown) {
    // The cause's message is kept for the logs (start-up failures print it); clients get
    // a fixed text from the error handler.
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`The database is unavailable: ${reason}`, { cause });
    this.name = 'DatabaseUnavailableError';
    this.code = codeOf(cause);
  }
}

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

const SOCKET_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH',
  'ENETDOWN', 'ENOTFOUND', 'EAI_AGAIN', 'EMFILE', 'ENFILE',
]);
const SQLSTATES = new Set([
  '57P01', // admin_shutdown (also pg_terminate_backend)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, in recovery)
  '53300', // too_many_connections
  '53100', // disk_full: nothing can be written until the operator frees space
  '53200', // out_of_memory
  '25006', // read_only_sql_transaction: a write reached a standby (a failover under way)
  '25P03', // idle_in_transaction_session_timeout: the session was ended (a frozen process, pg.ts)
  '57P05', // idle_session_timeout
  '57014', // query_canceled: statement_timeout, or the cancel sent when the client gave up (pg.ts)
  'PAYD_READ_ONLY_HOST', // hosts.ts: a new connection found its host read-only
]);
// node-postgres and pg-pool report these without a code.
const MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable|Query read timeout|Client was closed and is not queryable)/;

/** True when err (or an error it wraps) is a connection-level failure. */
export function isConnectionFailure(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof DatabaseUnavailableError) return true;
    const code = codeOf(e);
    if (code && (SOCKET_CODES.has(code) || SQLSTATES.has(code) || code.startsWith('08'))) return true;
    if (e instanceof Error && MESSAGES.test(e.message)) return true;
  }
  return false;
}

/** Seconds a client is asked to wait (Retry-After) when the row it needs is busy. */
export const BUSY_RETRY_AFTER_SECONDS = 1;

/**
 * The row a statement needs stayed locked by another transaction for longer than payd
 * waits (lock_timeout, SQLSTATE 55P03), or this process already has a statement waiting
 * for it and this one waited its turn as long (pg.ts, onRow). Nothing was written: the
 * error handler answers 409 resource-busy with Retry-After, for that resource only.
 */
export class DatabaseBusyError extends Error {
  readonly code = '55P03';
  constructor(cause?: unknown) {
    super('The row is locked by another transaction', cause === undefined ? undefined : { cause });
    this.name = 'DatabaseBusyError';
  }
}

/** True for a lock wait that gave up (lock_timeout, NOWAIT: 55P03) or DatabaseBusyError. */
export function isLockTimeout(err: unknown): boolean {
  return err instanceof DatabaseBusyError || codeOf(err) === '55P03';
}

/**
 * The error to throw from the adapter: connection failures become DatabaseUnavailableError,
 * lock waits that gave up DatabaseBusyError.
 */
export function toDbError(err: unknown): unknown {
  if (err instanceof DatabaseUnavailableError || err instanceof DatabaseBusyError) return err;
  if (isLockTimeout(err)) return new DatabaseBusyError(err);
  if (!isConnectionFailure(err)) return err;
  return new DatabaseUnavailableError(err);
}
