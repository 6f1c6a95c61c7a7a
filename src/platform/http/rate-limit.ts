// Request rate limits (issue 45, docs/operations.md "Rate limits"): per credential and per
// client address on POST /oauth/token, per credential on the payment API. Each is a fixed
// window of PAYD_RATE_LIMIT_WINDOW_SECONDS; past its limit a request is answered 429
// problem+json with Retry-After (the seconds left in the window) and the RateLimit headers
// (RateLimit-Limit, -Remaining, -Reset, the IETF draft's names), which every answer of a
// limited route carries.
//
// A limit is a count per key and window: each process counts in memory (SharedCounters
// below), so a request costs a Map lookup, no promise and no database statement, and
// about once a second (PAYD's sync, one statement for every key it counted) adds its
// counts to rate_limit_counters and reads back each key's total, so that the processes on
// one database agree. A process learns what the others counted at its next sync after a
// request of that key: with N processes a key can get up to N times what one admits in a
// second above its limit. When the database does not answer, each process keeps counting
// alone (its own limit, never an error) and adds its counts once it can.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sha256, sha256For } from '../crypto/secrets.ts';
import type { Db } from '../db/index.ts';
import { rateLimitRepo } from './rate-limit.repo.ts';
import { Problem, PROBLEM_TYPE } from './problem.ts';
import { API_KEY_HEADER } from './auth.ts';

interface Entry {
  scope: string;
  key: string;
  /** When the window ends (ms since the epoch). */
  resetAt: number;
  /** Every process's count for the window, as the database last told it (this process's synced counts included). */
  total: number;
  /** Counted here since the last sync. */
  unsynced: number;
}

/** Counters kept in memory and added to rate_limit_counters at each sync. */
export class SharedCounters {
  private readonly entries = new Map<string, Entry>();
  private chain: Promise<void> = Promise.resolve();
  private syncing = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastCleanup = Date.now();
  /** Requests refused, by limit, since the start. */
  readonly refused: Record<string, number> = {};

  constructor(
    private readonly db: Db,
    private readonly opts: { maxEntries?: number; onSyncError?: (err: unknown) => void } = {},
  ) {}

  /** Counts one request of key under scope; returns the window's count so far and the ms left in it. */
  incr(scope: string, key: string, windowMs: number): { current: number; ttl: number } {
    const now = Date.now();
    const id = `${scope}\u0000${key}`;
    let e = this.entries.get(id);
    if (!e || e.resetAt <= now) {
      if (e) this.entries.delete(id); // re-inserted last: the Map's order stays oldest window first
      else if (this.entries.size >= (this.opts.maxEntries ?? 100_000)) this.evictOne();
      e = { scope, key, resetAt: now + windowMs, total: 0, unsynced: 0 };
      this.entries.set(id, e);
    }
    e.unsynced++;
    return { current: e.total + e.unsynced, ttl: e.resetAt - now };
  }

  private evictOne(): void {
    const oldest = this.entries.keys().next();
    if (!oldest.done) this.entries.delete(oldest.value);
  }

  /**
   * Adds what this process counted to the shared counters and reads back each key's total
   * (one statement). It runs after the sync under way, if any, so that it includes every
   * request counted before the call.
   */
  sync(): Promise<void> {
    this.syncing++;
    const run = this.chain.then(() => this.doSync()).finally(() => { this.syncing--; });
    this.chain = run.catch(() => {});
    return run;
  }

  private async doSync(): Promise<void> {
    const now = Date.now();
    const batch: Entry[] = [];
    for (const [id, e] of this.entries) {
      if (e.unsynced > 0) batch.push(e);
      else if (e.resetAt <= now) this.entries.delete(id);
    }
    if (now - this.lastCleanup >= 60_000) {
      this.lastCleanup = now;
      await rateLimitRepo.deleteEnded(this.db, now - 60_000).catch(this.opts.onSyncError);
    }
    if (batch.length === 0) return;
    // One lock order for every process (no deadlock between two syncs).
    batch.sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const pushed = batch.map((e) => e.unsynced);
    for (const e of batch) e.unsynced = 0;
    try {
      const res = await rateLimitRepo.sync(this.db, batch.map((e) => e.scope), batch.map((e) => e.key), pushed, batch.map((e) => e.resetAt), now);
      const after = Date.now();
      for (const row of res.rows) {
        const e = this.entries.get(`${row.scope}\u0000${row.key}`);
        // Not if its window ended meanwhile (a new one counts afresh).
        if (!e || !batch.includes(e) || row.reset_ms <= after) continue;
        e.total = Number(row.count);
        e.resetAt = Number(row.reset_ms); // the window the first process opened
      }
    } catch (err) {
      batch.forEach((e, i) => { e.unsynced += pushed[i]!; }); // added at the next sync
      this.opts.onSyncError?.(err);
    }
  }

  start(intervalMs: number): void {
    // A tick while a sync still runs (a slow database) is skipped, not queued.
    this.timer ??= setInterval(() => { if (this.syncing === 0) this.sync().catch(() => {}); }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.chain;
  }
}

export interface RateLimitSettings {
  windowSeconds: number;
  tokenPerKey: number;
  tokenPerAddress: number;
  apiPerKey: number;
}

declare module 'fastify' {
  interface FastifyInstance {
    rateLimits: SharedCounters;
  }
}

/** A limit's verdict on one request: allowed or exceeded, and what its headers say. */
interface Verdict {
  max: number;
  remaining: number;
  /** Seconds left in the window. */
  reset: number;
  exceeded: boolean;
}
type Check = (request: FastifyRequest) => Verdict | undefined;

/** A short, fixed-length key from a secret's SHA-256 (an API key is never kept, not even in memory). */
function secretKey(digest: Buffer): string {
  return digest.toString('base64url').slice(0, 22);
}

/**
 * The credential of a token request: the API key (hashed), or an identity application's
 * client_id for client credentials (HTTP Basic or the body). Undefined for the identity
 * provider's user grants (authorization_code, refresh_token, password): many users share
 * one application's client_id, so those count per address only.
 */
export function tokenCredential(request: FastifyRequest): string | undefined {
  const apiKey = request.headers[API_KEY_HEADER];
  // (The same hash as the key's lookup, computed once for the request.)
  if (typeof apiKey === 'string') return `k:${secretKey(sha256For(request.headers, apiKey))}`;
  const body = (request.body ?? {}) as Record<string, unknown>;
  if (body.grant_type !== 'client_credentials') return undefined;
  const basic = /^basic\s+(\S+)/i.exec(request.headers.authorization ?? '')?.[1];
  if (basic) {
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    // The client_id as sent (not URL-decoded: a malformed escape must not throw here; the grant refuses it).
    return `c:${secretKey(sha256(colon >= 0 ? decoded.slice(0, colon) : decoded))}`;
  }
  if (typeof body.client_id === 'string') return `c:${secretKey(sha256(body.client_id))}`;
  return undefined;
}

/** The payment API's credential of an authenticated request: the API key (behind the token), else the entity. */
function apiCredential(request: FastifyRequest): string | undefined {
  const p = request.principal;
  if (!p?.entityId || p.via === 'admin') return undefined;
  return p.apiKeyId ? `k:${p.apiKeyId}` : `e:${p.entityId}`;
}

function headers(max: number, remaining: number, reset: number): Record<string, string> {
  return { 'ratelimit-limit': String(max), 'ratelimit-remaining': String(remaining), 'ratelimit-reset': String(reset) };
}

/**
 * Registers the shared counters and the limits: POST /oauth/token per address (onRequest,
 * before the body is read) and per credential (preValidation, once the body is parsed),
 * the payment API per credential (onRequest, after authentication). Register after the
 * auth plugin and before the routes. The hooks are synchronous: a request costs no promise.
 */
export async function registerRateLimits(app: FastifyInstance, db: Db, settings: RateLimitSettings, onSyncError: (err: unknown) => void): Promise<void> {
  const counters = new SharedCounters(db, { onSyncError });
  app.decorate('rateLimits', counters);
  app.addHook('onReady', async () => counters.start(1000));
  app.addHook('onClose', () => counters.stop()); // what was not synced yet is dropped: a few requests' counts
  const windowMs = settings.windowSeconds * 1000;

  const limit = (scope: string, max: number, key: (request: FastifyRequest) => string | undefined): Check | undefined => {
    if (max <= 0) return undefined;
    return (request) => {
      const k = key(request);
      if (k === undefined) return undefined;
      const { current, ttl } = counters.incr(scope, k, windowMs);
      return { max, remaining: Math.max(0, max - current), reset: Math.ceil(ttl / 1000), exceeded: current > max };
    };
  };
  /** Counts the request under each limit; throws the 429 of the first it exceeds, else sets the tightest's headers. */
  const enforce = (checks: Array<Check | undefined>, request: FastifyRequest, reply: FastifyReply, what: string, oauth: boolean): void => {
    let tightest: Verdict | undefined;
    for (const check of checks) {
      const v = check?.(request);
      if (!v) continue;
      if (v.exceeded) {
        counters.refused[what] = (counters.refused[what] ?? 0) + 1;
        throw new Problem({
          status: 429, type: PROBLEM_TYPE.tooManyRequests, title: 'Too many requests',
          detail: `Rate limit of ${what} reached (${v.max} requests in ${settings.windowSeconds} s). Retry after ${v.reset} s.`,
          headers: { ...headers(v.max, 0, v.reset), 'retry-after': String(v.reset) },
          ...(oauth ? { extra: { error: 'too_many_requests' } } : {}),
        });
      }
      if (!tightest || v.remaining < tightest.remaining) tightest = v;
    }
    if (tightest) reply.headers(headers(tightest.max, tightest.remaining, tightest.reset));
  };

  const tokenAddress = limit('token-address', settings.tokenPerAddress, (request) => request.ip);
  const tokenKey = limit('token-key', settings.tokenPerKey, tokenCredential);
  const api = limit('api-key', settings.apiPerKey, apiCredential);
  app.addHook('onRoute', (route) => {
    if (route.url === '/oauth/token' && route.method === 'POST') {
      const add = (hook: 'onRequest' | 'preValidation', fn: (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void) => {
        const existing = route[hook];
        route[hook] = [fn, ...(Array.isArray(existing) ? existing : existing ? [existing] : [])] as never;
      };
      add('onRequest', (request, reply, done) => {
        enforce([tokenAddress], request, reply, 'token requests from this address', true);
        done();
      });
      add('preValidation', (request, reply, done) => {
        enforce([tokenKey], request, reply, 'token requests for this credential', true);
        done();
      });
    }
  });
  // The payment API: every route whose authentication (auth.ts, an earlier onRequest hook) found a merchant's credential.
  if (api) {
    app.addHook('onRequest', (request, reply, done) => {
      if (request.principal) enforce([api], request, reply, 'requests for this credential', false);
      done();
    });
  }
}
