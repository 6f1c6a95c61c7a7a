// Several PostgreSQL hosts in one DATABASE_URL, libpq's way
// (postgres://user:password@db1:5432,db2:5432/payd): payd writes only to the primary, so
// with more than one host each new connection goes to the host last found writable, and
// is checked to be so (`SHOW transaction_read_only`, what libpq's
// target_session_attrs=read-write checks) before the pool uses it. A host that refuses
// the connection or turns out read-only (a standby, or a demoted primary) moves the
// choice to the next host, so after a failover the pool finds the new primary within as
// many connection attempts as there are hosts; the requests in between get 503 with
// Retry-After like any database outage. node-postgres reads one host per URL, hence this.

/** The parts of a multi-host URL: one single-host URL per host, in the order given. */
export function splitHosts(url: string): string[] {
  const m = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/s.exec(url);
  if (!m) return [url];
  const [, scheme, userinfo = '', hostlist = '', rest = ''] = m;
  if (!hostlist.includes(',')) return [url];
  // target_session_attrs is libpq's; payd always wants the primary.
  const tail = rest.replace(/([?&])target_session_attrs=[^&#]*&?/, '$1').replace(/[?&]$/, '');
  return hostlist.split(',').map((h) => `${scheme}${userinfo}${h.trim()}${tail}`);
}

/** A URL with the password left out, for messages. */
export function describeHost(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? `:${u.port}` : ''}`;
  } catch {
    return 'the database';
  }
}

/**
 * Which host new connections go to. `failed(url)` reports that a connection to url was
 * refused or found read-only: if url is still the current choice, the next host becomes it
 * (round robin), so concurrent failures of one host move the choice once.
 */
export class PrimaryChoice {
  private index = 0;
  constructor(readonly urls: readonly string[]) {
    if (urls.length === 0) throw new Error('no database host');
  }
  get multi(): boolean {
    return this.urls.length > 1;
  }
  current(): string {
    return this.urls[this.index]!;
  }
  failed(url: string): void {
    if (this.urls[this.index] === url) this.index = (this.index + 1) % this.urls.length;
  }
}

/** The SQLSTATE of a statement that writes on a read-only connection (a standby). */
export const READ_ONLY_SQL_TRANSACTION = '25006';

export class ReadOnlyHostError extends Error {
  readonly code = 'PAYD_READ_ONLY_HOST';
  constructor(host: string) {
    super(`${host} is read-only (a standby, not the primary)`);
    this.name = 'ReadOnlyHostError';
  }
}
