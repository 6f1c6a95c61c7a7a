// The one place that reads process.env: every setting is parsed, validated and typed here.
import { type PartnerSpec, PartnersConfigError, parsePartners } from './partners/partners-config.ts';
import { splitHosts } from './platform/db/hosts.ts';
import type { TracingConfig } from './platform/observability/otel-sdk.ts';
import type { WebhookSettings } from './webhooks/index.ts';
import { RECENT_PAYMENTS_DEFAULT } from './payments/recent-payments.ts';
import path from 'node:path';

export type Role = 'all' | 'api' | 'identity' | 'worker';

export interface Config extends WebhookSettings {
  port: number;
  host: string;
  /** Public base URL of the payment API (used in links); defaults to http://localhost:PORT. */
  baseUrl: string;
  /** PostgreSQL connection string; when absent payd runs on embedded PGlite. */
  databaseUrl: string | undefined;
  /** A streaming replica (one host) for reads that allow staleness; with DATABASE_URL only. */
  databaseReadUrl: string | undefined;
  /** The staleness (ms) lists, events and the dashboard accept from the replica when the request names none. */
  readMaxLagMs: number;
  /**
   * PostgreSQL connections per process (PAYD_DB_POOL_SIZE, default 10): one process runs
   * one thread, which kept 3-4 statements in flight at saturation; more connections only
   * add backends that compete for the database's CPU (docs/decisions.md, "Pool size").
   */
  dbPoolSize: number;
  /**
   * PostgreSQL limits on payd's sessions (platform/db/pg.ts): a statement's run
   * (PAYD_DB_STATEMENT_TIMEOUT_MS, default 30000), a row lock's wait
   * (PAYD_DB_LOCK_TIMEOUT_MS, default 2000: then 409 resource-busy), a session idle inside
   * a transaction (PAYD_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS, default 10000: a frozen
   * process's locks are released).
   */
  dbTimeouts: { statementTimeoutMs: number; lockTimeoutMs: number; idleInTransactionTimeoutMs: number };
  /** Where the embedded database and the development master key live. */
  dataDir: string;
  /** Bearer token of the operator API; the operator API is off when unset. */
  adminToken: string | undefined;
  /** 32-byte key (base64) that encrypts private signing keys at rest. */
  masterKey: string | undefined;
  accessTokenTtlSeconds: number;
  bodyLimitBytes: number;
  logLevel: string;
  /** Create a demo merchant on first start (default: only on the embedded database). */
  demo: boolean;
  role: Role;
  /** Shutdown grace period: in-flight requests get this long to finish after SIGTERM. */
  shutdownGraceMs: number;
  /** A partner call that takes longer has an unknown outcome (the transaction stays PENDING). */
  partnerTimeoutMs: number;
  /** Captures, refunds and voids one payment may have, all kinds together (docs/operations.md). */
  maxOperationsPerPayment: number;
  /** Payment attempts one client session takes (a declined card may be retried; card testing is capped). */
  sessionMaxAttempts: number;
  /** Payments this process remembers as it last wrote them, for the operation that follows (payments/recent-payments.ts; 0: none). */
  recentPayments: number;
  /** A replay of an in-flight idempotency key is held this many times the interval, then answered 409. */
  idempotencyHoldAttempts: number;
  idempotencyHoldIntervalMs: number;
  /** Pending partner transactions older than this are settled by the recovery worker. */
  recoveryGraceSeconds: number;
  /** How often the recovery worker looks for pending partner transactions. */
  recoveryIntervalMs: number;
  /** A 3-D Secure challenge the shopper leaves longer than this is cancelled and its payment fails (PAYD_CHALLENGE_EXPIRY_SECONDS). */
  challengeExpirySeconds: number;
  /** Latency of the simulated partners (to play slow acquirers in tests and demos). */
  simLatencyMs: number;
  /** Simulated partners answer pure decisions inline (PAYD_SIM_INLINE, default true; see docs/performance.md). */
  simInline: boolean;
  /** PAYD_PARTNERS: the partners that run and their credentials (docs/connectors.md); undefined: the simulators. */
  partners: PartnerSpec[] | undefined;
  // (The webhook settings, webhook*, are WebhookSettings': src/webhooks/index.ts.)
  /** Identity: accept http:// redirect URIs on localhost (development; default only on the embedded database). */
  identityAllowHttpLocalhost: boolean;
  /** {identity_claims_base}: namespace of payd's own claims (login-as-name). */
  identityClaimsBase: string;
  /** {console_origin}: origin of the administration console (login-as checks Allowed Origins for it). */
  consoleOrigin: string;
  /** Global login-as configuration: the first-party client, its redirect URL and response type used when a call names no client. */
  identityLoginAsClientId: string | undefined;
  identityLoginAsRedirectUri: string | undefined;
  identityLoginAsResponseType: 'code' | 'token';
  /** PAYD_CONSOLE_REQUIRE_MFA: console administrators must have signed in with a second factor (amr mfa). */
  consoleRequireSecondFactor: boolean;
  /** Identity mails (password reset): sent over SMTP when set (smtp:// or smtps:// URL); always kept in the outbox the console shows. */
  smtpUrl: string | undefined;
  /** From address of identity mails. */
  mailFrom: string;
  /** start --no-migrate (PAYD_NO_MIGRATE): check that the schema is current instead of migrating it. */
  noMigrate: boolean;
  /** A request whose headers and body have not all arrived within this is answered 408 and its connection closed. */
  requestTimeoutMs: number;
  /** A connection whose request headers have not all arrived within this is closed (idle or slow new connections). */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Connections above this are refused (closed at once) while the others are served. */
  maxConnections: number;
  /** Connections one client address (the socket's peer; an IPv6 /64) may hold; those above are closed at once (0: no cap). */
  maxConnectionsPerAddress: number;
  /** Rate limits (docs/operations.md, Rate limits): the length of their fixed windows. */
  rateLimitWindowSeconds: number;
  /** Token requests per window for one credential (a merchant's API key, an identity application's client credentials); 0: no limit. */
  rateLimitTokenPerKey: number;
  /** Token requests per window from one client address, whatever the grant and the credential; 0: no limit. */
  rateLimitTokenPerAddress: number;
  /** Payment API requests per window for one credential (the API key, or the API key behind the bearer token); 0: no limit. */
  rateLimitApiPerKey: number;
  /** The dashboard's request log (src/platform/observability/request-log.ts): calls kept per entity per second in each process (errors first); 0: no log. */
  requestLogPerSecond: number;
  /** Started by npm (npm start, npx): stop, as on SIGTERM, when the npm process that started us is gone. */
  stopWithParent: boolean;
  /** Test only (PAYD_FAULT_KILL_AT): the named step where the process kills itself (src/platform/fault-points.ts). */
  faultKillAt: string | undefined;
  /** Test only (PAYD_FAULT_SIGNAL, default SIGKILL): the signal the process sends itself there; SIGSTOP freezes it. */
  faultSignal: 'SIGKILL' | 'SIGSTOP';
  /** OpenTelemetry tracing (docs/operations.md, Tracing): off unless PAYD_OTEL_EXPORTER names an exporter. */
  tracing: TracingConfig;
}

export type { TracingConfig };

/** A start-up error the operator must fix: one line on stderr, exit code 2. */
export class ConfigError extends Error {}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return n;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function url(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  try {
    const u = new URL(raw);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

function parseDatabaseUrl(env: Env): string | undefined {
  const raw = env.DATABASE_URL || undefined;
  if (raw === undefined) return undefined;
  // Several hosts (postgres://user:password@db1:5432,db2:5432/payd): each must be a URL.
  for (const one of splitHosts(raw)) {
    let u: URL;
    try {
      u = new URL(one);
    } catch {
      throw new ConfigError('DATABASE_URL must be a postgres://user:password@host:port/database URL (hosts separated by commas), got something that is not a URL');
    }
    if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
      throw new ConfigError(`DATABASE_URL must be a postgres:// or postgresql:// URL, got a ${u.protocol}// URL`);
    }
    if (!u.hostname && !u.searchParams.get('host')) throw new ConfigError('DATABASE_URL names no host (postgres://user:password@host:port/database)');
  }
  return raw;
}

function parseReadUrl(env: Env, databaseUrl: string | undefined): string | undefined {
  const raw = env.DATABASE_READ_URL || undefined;
  if (raw === undefined) return undefined;
  if (databaseUrl === undefined) throw new ConfigError('DATABASE_READ_URL needs DATABASE_URL: the embedded database has no replica');
  if (splitHosts(raw).length > 1) {
    throw new ConfigError('DATABASE_READ_URL takes one host (a standby, or a load balancer such as HAProxy with Patroni\'s /replica check in front of several)');
  }
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError('DATABASE_READ_URL must be a postgres://user:password@host:port/database URL, got something that is not a URL');
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    throw new ConfigError(`DATABASE_READ_URL must be a postgres:// or postgresql:// URL, got a ${u.protocol}// URL`);
  }
  if (!u.hostname && !u.searchParams.get('host')) throw new ConfigError('DATABASE_READ_URL names no host (postgres://user:password@host:port/database)');
  return raw;
}

function masterKey(env: Env): string | undefined {
  const raw = env.PAYD_MASTER_KEY || undefined;
  if (raw === undefined) return undefined;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(raw.trim()) || Buffer.from(raw.trim(), 'base64').length !== 32) {
    throw new ConfigError('PAYD_MASTER_KEY must be 32 bytes encoded in base64 (openssl rand -base64 32)');
  }
  return raw;
}

function partners(env: Env): PartnerSpec[] | undefined {
  try {
    return parsePartners(env.PAYD_PARTNERS, env);
  } catch (err) {
    if (err instanceof PartnersConfigError) throw new ConfigError(err.message);
    throw err;
  }
}

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

/** PAYD_OTEL_EXPORTER and the standard variables payd reads itself (the exporter reads OTEL_EXPORTER_OTLP_*). */
function tracing(env: Env): TracingConfig {
  const raw = (env.PAYD_OTEL_EXPORTER || 'none').toLowerCase();
  if (raw !== 'none' && raw !== 'otlp' && raw !== 'console') {
    throw new ConfigError(`PAYD_OTEL_EXPORTER must be none, otlp or console, got "${env.PAYD_OTEL_EXPORTER}"`);
  }
  const name = (env.OTEL_TRACES_SAMPLER || 'parentbased_always_on').toLowerCase();
  if (!(SAMPLERS as readonly string[]).includes(name)) {
    throw new ConfigError(`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, got "${env.OTEL_TRACES_SAMPLER}"`);
  }
  const argRaw = env.OTEL_TRACES_SAMPLER_ARG;
  const ratio = argRaw === undefined || argRaw === '' || !name.endsWith('traceidratio') ? 1 : Number(argRaw);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a ratio between 0 and 1, got "${argRaw}"`);
  }
  return {
    exporter: bool(env, 'OTEL_SDK_DISABLED', false) ? 'none' : raw,
    sampler: { name: name as TracingConfig['sampler']['name'], ratio },
    serviceName: env.OTEL_SERVICE_NAME || 'payd',
  };
}

function origin(name: string, raw: string): string {
  try {
    const u = new URL(raw);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
    return u.origin;
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
}

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const port = int(env, 'PORT', 3000, 0, 65535);
  const databaseUrl = parseDatabaseUrl(env);
  const logLevel = env.LOG_LEVEL || 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const role = (env.PAYD_ROLE || 'all') as Role;
  if (!['all', 'api', 'identity', 'worker'].includes(role)) {
    throw new ConfigError(`PAYD_ROLE must be one of all, api, identity, worker, got "${role}"`);
  }
  const adminToken = env.PAYD_ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError('PAYD_ADMIN_TOKEN must be at least 16 characters long');
  }
  const config: Config = {
    port,
    host: env.HOST || '0.0.0.0',
    baseUrl: url(env, 'PAYD_BASE_URL', `http://localhost:${port}`),
    databaseUrl,
    databaseReadUrl: parseReadUrl(env, databaseUrl),
    readMaxLagMs: int(env, 'PAYD_READ_MAX_LAG_MS', 1000, 0, 3_600_000),
    dbPoolSize: int(env, 'PAYD_DB_POOL_SIZE', 10, 1, 500),
    dbTimeouts: {
      statementTimeoutMs: int(env, 'PAYD_DB_STATEMENT_TIMEOUT_MS', 30000, 100, 3600000),
      lockTimeoutMs: int(env, 'PAYD_DB_LOCK_TIMEOUT_MS', 2000, 10, 600000),
      idleInTransactionTimeoutMs: int(env, 'PAYD_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS', 10000, 100, 3600000),
    },
    dataDir: path.resolve(env.PAYD_DATA_DIR || '.payd'),
    adminToken,
    masterKey: masterKey(env),
    accessTokenTtlSeconds: int(env, 'PAYD_ACCESS_TOKEN_TTL', 3600, 60, 86400),
    bodyLimitBytes: int(env, 'PAYD_BODY_LIMIT', 1024 * 1024, 1024, 64 * 1024 * 1024),
    logLevel,
    demo: bool(env, 'PAYD_DEMO', databaseUrl === undefined),
    role,
    shutdownGraceMs: int(env, 'PAYD_SHUTDOWN_GRACE_MS', 10000, 0, 600000),
    partnerTimeoutMs: int(env, 'PAYD_PARTNER_TIMEOUT_MS', 10000, 100, 120000),
    maxOperationsPerPayment: int(env, 'PAYD_MAX_OPERATIONS_PER_PAYMENT', 200, 1, 10000),
    sessionMaxAttempts: int(env, 'PAYD_SESSION_MAX_ATTEMPTS', 5, 1, 50),
    recentPayments: int(env, 'PAYD_RECENT_PAYMENTS', RECENT_PAYMENTS_DEFAULT, 0, 1000000),
    idempotencyHoldAttempts: int(env, 'PAYD_IDEMPOTENCY_HOLD_ATTEMPTS', 20, 0, 1000),
    idempotencyHoldIntervalMs: int(env, 'PAYD_IDEMPOTENCY_HOLD_INTERVAL_MS', 100, 1, 10000),
    recoveryGraceSeconds: int(env, 'PAYD_RECOVERY_GRACE_SECONDS', 60, 1, 86400),
    recoveryIntervalMs: int(env, 'PAYD_RECOVERY_INTERVAL_MS', 10000, 100, 3600000),
    challengeExpirySeconds: int(env, 'PAYD_CHALLENGE_EXPIRY_SECONDS', 1800, 60, 86400),
    simLatencyMs: int(env, 'PAYD_SIM_LATENCY_MS', 0, 0, 60000),
    simInline: bool(env, 'PAYD_SIM_INLINE', true),
    partners: partners(env),
    webhookBackoffBaseMs: int(env, 'PAYD_WEBHOOK_BACKOFF_BASE_MS', 60000, 10, 3600000),
    webhookBackoffMaxMs: int(env, 'PAYD_WEBHOOK_BACKOFF_MAX_MS', 3600000, 10, 86400000),
    webhookMaxAgeMs: int(env, 'PAYD_WEBHOOK_MAX_AGE_HOURS', 26, 1, 720) * 3600000,
    webhookPollMs: int(env, 'PAYD_WEBHOOK_POLL_MS', 1000, 10, 60000),
    webhookTimeoutMs: int(env, 'PAYD_WEBHOOK_TIMEOUT_MS', 10000, 100, 60000),
    webhookLeaseMs: int(env, 'PAYD_WEBHOOK_LEASE_MS', 60000, 1000, 3600000),
    webhookAllowPrivateTargets: bool(env, 'PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS', databaseUrl === undefined),
    identityAllowHttpLocalhost: bool(env, 'PAYD_IDENTITY_ALLOW_HTTP_LOCALHOST', databaseUrl === undefined),
    identityLoginAsClientId: env.PAYD_IDENTITY_LOGIN_AS_CLIENT_ID || undefined,
    identityLoginAsRedirectUri: env.PAYD_IDENTITY_LOGIN_AS_REDIRECT_URI || undefined, // kept as written: matched exactly
    identityLoginAsResponseType: (env.PAYD_IDENTITY_LOGIN_AS_RESPONSE_TYPE || 'code') as 'code' | 'token',
    consoleRequireSecondFactor: bool(env, 'PAYD_CONSOLE_REQUIRE_MFA', false),
    identityClaimsBase: '', // derived below from the final base URL
    smtpUrl: env.PAYD_SMTP_URL || undefined,
    mailFrom: env.PAYD_MAIL_FROM || '',
    consoleOrigin: '',
    noMigrate: bool(env, 'PAYD_NO_MIGRATE', false),
    requestTimeoutMs: int(env, 'PAYD_REQUEST_TIMEOUT_MS', 30000, 100, 3600000),
    headersTimeoutMs: int(env, 'PAYD_HEADERS_TIMEOUT_MS', 10000, 100, 3600000),
    keepAliveTimeoutMs: int(env, 'PAYD_KEEP_ALIVE_TIMEOUT_MS', 72000, 100, 3600000),
    maxConnections: int(env, 'PAYD_MAX_CONNECTIONS', 1000, 1, 1000000),
    maxConnectionsPerAddress: int(env, 'PAYD_MAX_CONNECTIONS_PER_ADDRESS', 500, 0, 1000000),
    rateLimitWindowSeconds: int(env, 'PAYD_RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86400),
    rateLimitTokenPerKey: int(env, 'PAYD_RATE_LIMIT_TOKEN_PER_KEY', 600, 0, 1_000_000_000),
    rateLimitTokenPerAddress: int(env, 'PAYD_RATE_LIMIT_TOKEN_PER_ADDRESS', 3000, 0, 1_000_000_000),
    rateLimitApiPerKey: int(env, 'PAYD_RATE_LIMIT_API_PER_KEY', 12000, 0, 1_000_000_000),
    requestLogPerSecond: int(env, 'PAYD_REQUEST_LOG_PER_SECOND', 200, 0, 100_000),
    stopWithParent: env.npm_command !== undefined,
    faultKillAt: env.PAYD_FAULT_KILL_AT || undefined,
    faultSignal: (env.PAYD_FAULT_SIGNAL || 'SIGKILL') as 'SIGKILL' | 'SIGSTOP',
    tracing: tracing(env),
  };
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new ConfigError('PAYD_HEADERS_TIMEOUT_MS must not be longer than PAYD_REQUEST_TIMEOUT_MS');
  }
  if (config.identityLoginAsRedirectUri !== undefined && !URL.canParse(config.identityLoginAsRedirectUri)) {
    throw new ConfigError(`PAYD_IDENTITY_LOGIN_AS_REDIRECT_URI must be an absolute URL, got "${config.identityLoginAsRedirectUri}"`);
  }
  if (!['code', 'token'].includes(config.identityLoginAsResponseType)) {
    throw new ConfigError(`PAYD_IDENTITY_LOGIN_AS_RESPONSE_TYPE must be code or token, got "${config.identityLoginAsResponseType}"`);
  }
  if (config.smtpUrl !== undefined && !/^smtps?:\/\/[^/\s]+\/?$/.test(config.smtpUrl)) {
    throw new ConfigError('PAYD_SMTP_URL must be an smtp:// or smtps:// URL such as smtps://user:password@smtp.example.com:465');
  }
  if (config.webhookLeaseMs <= config.webhookTimeoutMs) {
    throw new ConfigError('PAYD_WEBHOOK_LEASE_MS must be longer than PAYD_WEBHOOK_TIMEOUT_MS');
  }
  // Recovery: a partner transaction is settled by recovery only once the partner call's
  // own deadline has surely passed (docs/decisions.md, "Recovery").
  if (config.recoveryGraceSeconds * 1000 <= config.partnerTimeoutMs) {
    throw new ConfigError(`PAYD_RECOVERY_GRACE_SECONDS (${config.recoveryGraceSeconds} s) must be longer than PAYD_PARTNER_TIMEOUT_MS (${config.partnerTimeoutMs} ms)`);
  }
  if (config.faultKillAt !== undefined && !/^[a-z-]+:[a-z-]+(@\d+)?$/.test(config.faultKillAt)) {
    throw new ConfigError(`PAYD_FAULT_KILL_AT must name a step such as capture:after-record, got "${config.faultKillAt}"`);
  }
  if (!['SIGKILL', 'SIGSTOP'].includes(config.faultSignal)) {
    throw new ConfigError(`PAYD_FAULT_SIGNAL must be SIGKILL or SIGSTOP, got "${config.faultSignal}"`);
  }
  if (config.dbTimeouts.lockTimeoutMs >= config.dbTimeouts.statementTimeoutMs) {
    throw new ConfigError('PAYD_DB_LOCK_TIMEOUT_MS must be shorter than PAYD_DB_STATEMENT_TIMEOUT_MS');
  }
  const merged = { ...config, ...overrides };
  return {
    ...merged,
    identityClaimsBase: overrides.identityClaimsBase ?? (env.PAYD_IDENTITY_CLAIMS_BASE || `${merged.baseUrl}/claims`).replace(/\/$/, ''),
    consoleOrigin: overrides.consoleOrigin ?? origin('PAYD_CONSOLE_ORIGIN', env.PAYD_CONSOLE_ORIGIN || merged.baseUrl),
    mailFrom: overrides.mailFrom || env.PAYD_MAIL_FROM || `payd <no-reply@${new URL(merged.baseUrl).hostname}>`,
  };
}
