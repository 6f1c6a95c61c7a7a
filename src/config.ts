// The one place that reads process.env: every setting is parsed, validated and typed here.
import path from 'node:path';

export type Role = 'all' | 'api' | 'identity' | 'worker';

export interface Config {
  port: number;
  host: string;
  /** Public base URL of the payment API (used in links); defaults to http://localhost:PORT. */
  baseUrl: string;
  /** PostgreSQL connection string; when absent payd runs on embedded PGlite. */
  databaseUrl: string | undefined;
  dbPoolSize: number;
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
  /** A replay of an in-flight idempotency key is held this many times the interval, then answered 409. */
  idempotencyHoldAttempts: number;
  idempotencyHoldIntervalMs: number;
  /** Pending partner transactions older than this are settled by the recovery worker. */
  recoveryGraceSeconds: number;
  /** How often the recovery worker looks for pending partner transactions. */
  recoveryIntervalMs: number;
  /** Latency of the simulated partners (to play slow acquirers in tests and demos). */
  simLatencyMs: number;
  /** Simulated partners answer pure decisions inline (PAYD_SIM_INLINE, default true; see docs/performance.md). */
  simInline: boolean;
  /** Webhook retries: the first retry waits this long, then twice as long each time... */
  webhookBackoffBaseMs: number;
  /** ...up to this (before jitter). */
  webhookBackoffMaxMs: number;
  /** A delivery gives up (FAILED) when its next attempt would fall this long after it was created. */
  webhookMaxAgeMs: number;
  /** How often the webhook dispatcher looks for due deliveries. */
  webhookPollMs: number;
  /** A webhook call that takes longer is a failed attempt. */
  webhookTimeoutMs: number;
  /** A claimed delivery whose worker died is due again after this long (longer than the timeout). */
  webhookLeaseMs: number;
  /** Deliver to loopback, private and link-local addresses (default: only on the embedded database). */
  webhookAllowPrivateTargets: boolean;
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
  /** Test only (PAYD_FAULT_KILL_AT): the named step where the process kills itself (src/platform/fault-points.ts). */
  faultKillAt: string | undefined;
}

export class ConfigError extends Error {}

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

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const port = int(env, 'PORT', 3000, 0, 65535);
  const databaseUrl = env.DATABASE_URL || undefined;
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
    dbPoolSize: int(env, 'PAYD_DB_POOL_SIZE', 20, 1, 500),
    dataDir: path.resolve(env.PAYD_DATA_DIR || '.payd'),
    adminToken,
    masterKey: env.PAYD_MASTER_KEY || undefined,
    accessTokenTtlSeconds: int(env, 'PAYD_ACCESS_TOKEN_TTL', 3600, 60, 86400),
    bodyLimitBytes: int(env, 'PAYD_BODY_LIMIT', 1024 * 1024, 1024, 64 * 1024 * 1024),
    logLevel: env.LOG_LEVEL || 'info',
    demo: bool(env, 'PAYD_DEMO', databaseUrl === undefined),
    role,
    shutdownGraceMs: int(env, 'PAYD_SHUTDOWN_GRACE_MS', 10000, 0, 600000),
    partnerTimeoutMs: int(env, 'PAYD_PARTNER_TIMEOUT_MS', 10000, 100, 120000),
    idempotencyHoldAttempts: int(env, 'PAYD_IDEMPOTENCY_HOLD_ATTEMPTS', 20, 0, 1000),
    idempotencyHoldIntervalMs: int(env, 'PAYD_IDEMPOTENCY_HOLD_INTERVAL_MS', 100, 1, 10000),
    recoveryGraceSeconds: int(env, 'PAYD_RECOVERY_GRACE_SECONDS', 60, 1, 86400),
    recoveryIntervalMs: int(env, 'PAYD_RECOVERY_INTERVAL_MS', 10000, 100, 3600000),
    simLatencyMs: int(env, 'PAYD_SIM_LATENCY_MS', 0, 0, 60000),
    simInline: bool(env, 'PAYD_SIM_INLINE', true),
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
    identityClaimsBase: '', // derived below from the final base URL
    consoleOrigin: '',
    faultKillAt: env.PAYD_FAULT_KILL_AT || undefined,
  };
  if (config.identityLoginAsRedirectUri !== undefined && !URL.canParse(config.identityLoginAsRedirectUri)) {
    throw new ConfigError(`PAYD_IDENTITY_LOGIN_AS_REDIRECT_URI must be an absolute URL, got "${config.identityLoginAsRedirectUri}"`);
  }
  if (!['code', 'token'].includes(config.identityLoginAsResponseType)) {
    throw new ConfigError(`PAYD_IDENTITY_LOGIN_AS_RESPONSE_TYPE must be code or token, got "${config.identityLoginAsResponseType}"`);
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
  const merged = { ...config, ...overrides };
  return {
    ...merged,
    identityClaimsBase: overrides.identityClaimsBase ?? (env.PAYD_IDENTITY_CLAIMS_BASE || `${merged.baseUrl}/claims`).replace(/\/$/, ''),
    consoleOrigin: overrides.consoleOrigin ?? new URL(env.PAYD_CONSOLE_ORIGIN || merged.baseUrl).origin,
  };
}
