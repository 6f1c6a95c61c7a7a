// The request log of the dashboard (docs/dashboard.md "Requests"; docs/decisions.md
// "Request log"): the payment API's calls made with an entity's credentials (method,
// route template, status, idempotency key, request id, time, duration; never a body,
// a query string or a credential), for its team to see.
//
// The hot path pays an object and a push into the entity's buffer (onResponse, a callback
// hook: no promise). About once a second each process inserts what it buffered in one
// statement (unnest of arrays), whatever the request rate. Each entity's buffer holds at
// most `perSecond` calls between two flushes: past that, a successful call is not kept
// and an error replaces the oldest successful call kept (errors are what one looks for);
// what was not kept is counted (payd_request_log_dropped_total). A flush that fails is
// dropped (one warning for a run of failures, one line when a flush succeeds again): the log is a debugging aid, never a reason to hold memory or fail a
// request. Rows older than the retention (7 days) are deleted by each process every
// 10 minutes (the delete is idempotent; several processes doing it cost a few scans).
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/index.ts';
import { type RequestLogEntry, requestLogRepo } from './request-log.repo.ts';

export const REQUEST_LOG_RETENTION_DAYS = 7;
const MAX_ENTITIES = 10_000;
const MAX_KEY = 255;

export interface RequestLogOptions {
  /** Calls kept per entity between two flushes (about a second); 0: nothing is recorded. */
  perSecond: number;
  flushMs?: number;
  cleanupMs?: number;
  retentionDays?: number;
  /** Called when a flush or the retention delete fails, once until one succeeds again (no line a second while the database is away). */
  onError?: (err: unknown) => void;
  /** Called when a flush succeeds after `failed` failed ones. */
  onRecovered?: (failed: number) => void;
  /** Called with each call that was not kept. */
  onDropped?: () => void;
  now?: () => number;
}

export class RequestLog {
  private buffers = new Map<string, RequestLogEntry[]>();
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private flushing = false;
  private lastCleanup: number;
  /** Flushes failed in a row. */
  private failures = 0;
  /** Calls not kept since the start. */
  dropped = 0;

  constructor(private readonly db: Db, private readonly opts: RequestLogOptions) {
    this.lastCleanup = (opts.now ?? Date.now)();
  }

  get enabled(): boolean {
    return this.opts.perSecond > 0;
  }

  record(e: RequestLogEntry): void {
    let buffer = this.buffers.get(e.entity_id);
    if (!buffer) {
      if (this.buffers.size >= MAX_ENTITIES) return this.drop();
      buffer = [];
      this.buffers.set(e.entity_id, buffer);
    }
    if (buffer.length < this.opts.perSecond) {
      buffer.push(e);
      return;
    }
    // Full: an error takes the place of the oldest success; a success is not kept.
    if (e.status >= 400) {
      const i = buffer.findIndex((x) => x.status < 400);
      if (i >= 0) {
        buffer.splice(i, 1);
        buffer.push(e);
      }
    }
    this.drop();
  }

  private drop(): void {
    this.dropped++;
    this.opts.onDropped?.();
  }

  /** Inserts what was buffered (one statement per 5,000 calls), after the flush under way if any; deletes expired rows when due. */
  flush(): Promise<void> {
    const run = this.chain.then(() => this.doFlush());
    this.chain = run.catch(() => {});
    return run;
  }

  private async doFlush(): Promise<void> {
    const batch = [...this.buffers.values()].flat();
    this.buffers = new Map();
    try {
      for (let i = 0; i < batch.length; i += 5000) await requestLogRepo.insert(this.db, batch.slice(i, i + 5000));
      if (this.failures > 0 && batch.length > 0) {
        this.opts.onRecovered?.(this.failures);
        this.failures = 0;
      }
    } catch (err) {
      if (this.failures++ === 0) this.opts.onError?.(err);
    }
    const now = (this.opts.now ?? Date.now)();
    if (now - this.lastCleanup >= (this.opts.cleanupMs ?? 600_000)) {
      this.lastCleanup = now;
      await this.deleteExpired(now).catch((err: unknown) => { if (this.failures === 0) this.opts.onError?.(err); });
    }
  }

  /** Deletes the calls older than the retention; returns how many. */
  deleteExpired(now = (this.opts.now ?? Date.now)()): Promise<number> {
    return requestLogRepo.deleteOlderThan(this.db, new Date(now - (this.opts.retentionDays ?? REQUEST_LOG_RETENTION_DAYS) * 86_400_000));
  }

  start(): void {
    if (!this.enabled) return;
    // A tick while a flush still runs (a slow database) is skipped, not queued: the buffers keep filling up to their bound.
    this.timer ??= setInterval(() => {
      if (this.flushing) return;
      this.flushing = true;
      this.flush().catch(() => {}).finally(() => { this.flushing = false; });
    }, this.opts.flushMs ?? 1000);
    this.timer.unref();
  }

  /** Stops the timer and inserts what is buffered. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush().catch(() => {});
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    requestLog: RequestLog;
  }
}

/** Records every answered request made with a merchant's credential (not the operator's). Register after the auth plugin. */
export function registerRequestLog(app: FastifyInstance, log: RequestLog): void {
  app.decorate('requestLog', log);
  if (!log.enabled) return;
  app.addHook('onReady', async () => log.start());
  app.addHook('onClose', () => log.stop());
  app.addHook('onResponse', (request, reply, done) => {
    const p = request.principal;
    if (p?.entityId && p.via !== 'admin') {
      const key = request.headers['x-idempotency-key'];
      const duration = reply.elapsedTime;
      log.record({
        entity_id: p.entityId,
        created_at: new Date(Date.now() - duration).toISOString(),
        method: request.method,
        route: request.routeOptions.url ?? '(no route)',
        status: reply.statusCode,
        duration_ms: Math.round(duration),
        request_id: request.id,
        idempotency_key: typeof key === 'string' ? key.slice(0, MAX_KEY) : null,
        api_key_id: p.apiKeyId ?? null,
      });
    }
    done();
  });
}
