// The webhook dispatcher (worker role): claims due deliveries with FOR UPDATE SKIP LOCKED
// in short transactions, calls the targets outside any transaction, and records each
// attempt. All state is in the database: a worker that dies leaves its claims to expire
// (lease), then another worker (or the same one restarted) retries them. Delivery is at
// least once; receivers de-duplicate on the event id.
import { randomUUID } from 'node:crypto';
import type { Db } from '../platform/db/index.ts';
import { settledWithin } from '../platform/lifecycle.ts';
import { ATTR, contextOf, SpanKind, SpanStatusCode, type Tracer } from '../platform/observability/tracing.ts';
import { retryDelayMs } from './backoff.ts';
import { type ClaimedDelivery, deliveriesRepo, type DeliveryStatus } from './deliveries.repo.ts';
import type { WebhookSecrets } from './secrets.ts';
import { type AttemptOutcome, sendWebhook } from './send.ts';
import { signWebhook, SIGNATURE_HEADER } from './signature.ts';

/** The span attributes of a delivery attempt. */
const WEBHOOK_ATTR = {
  eventId: 'payd.webhook.event_id',
  eventType: 'payd.webhook.event_type',
  deliveryId: 'payd.webhook.delivery_id',
  attempt: 'payd.webhook.attempt',
  outcome: 'payd.webhook.outcome',
} as const;

export interface DispatcherOptions {
  backoffBaseMs: number;
  backoffMaxMs: number;
  maxAgeMs: number;
  pollMs: number;
  timeoutMs: number;
  leaseMs: number;
  allowPrivateTargets: boolean;
  /** Calls in flight at once in this process (default 10). */
  concurrency?: number;
  /** Tracing on: each attempt is a span, child of the trace that wrote the event (docs/decisions.md, "Tracing"). */
  tracer?: Tracer | undefined;
}

/** The JSON body of every webhook call. */
export function envelope(d: Pick<ClaimedDelivery, 'event_id' | 'type' | 'event_created_at' | 'entity_id' | 'data'>): string {
  return JSON.stringify({
    id: d.event_id,
    type: d.type,
    created_at: new Date(d.event_created_at).toISOString(),
    entity_id: d.entity_id,
    data: d.data,
  });
}

export class WebhookDispatcher {
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private tickInFlight: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  private stopCtl = new AbortController();
  private onError: (err: unknown) => void = () => {};
  private onSuccess: () => void = () => {};
  private readonly concurrency: number;

  constructor(
    private readonly db: Db,
    private readonly secrets: WebhookSecrets,
    private readonly opts: DispatcherOptions,
  ) {
    if (opts.leaseMs <= opts.timeoutMs) throw new RangeError('the lease must be longer than the call timeout');
    this.concurrency = opts.concurrency ?? 10;
  }

  private stopped: Promise<void> | undefined;

  /** True once stop() was called (until start() again). */
  get stopping(): boolean {
    return this.stopped !== undefined;
  }

  /**
   * Whether a claim may still start: started and not stopped, or a round still running.
   * False in a process that never started it, and for good once a stop's last round is
   * over (/metrics: payd_webhook_dispatcher_running; tests wait for it).
   */
  get claiming(): boolean {
    return this.running || this.tickInFlight !== undefined;
  }

  /** onError: a tick or a delivery's record that failed; onSuccess: a tick that claimed (the database answered). */
  start(onError: (err: unknown) => void = () => {}, onSuccess: () => void = () => {}): void {
    if (this.running) return;
    this.running = true;
    this.stopped = undefined;
    this.onError = onError;
    this.onSuccess = onSuccess;
    this.stopCtl = new AbortController();
    this.schedule(0);
  }

  /**
   * Stops claiming at once, then lets the calls in flight finish for up to `drainMs` and
   * records each outcome; a call still running after that is aborted and recorded as
   * interrupted (due again at once, so another worker sends it). Calling it again while
   * it drains returns the same promise.
   */
  stop(drainMs = 0): Promise<void> {
    this.stopped ??= this.drain(drainMs);
    return this.stopped;
  }

  private async drain(drainMs: number): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await this.tickInFlight;
    const all = Promise.allSettled([...this.inFlight]);
    if (this.inFlight.size > 0) await settledWithin(all, drainMs);
    this.stopCtl.abort();
    await all;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      this.tickInFlight = this.tick().finally(() => {
        this.tickInFlight = undefined;
      });
    }, ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (!this.running) return;
    let saturated = false;
    try {
      const free = this.concurrency - this.inFlight.size;
      if (free > 0) {
        const claimed = await this.claim(free);
        this.onSuccess();
        saturated = claimed.length === free;
        for (const d of claimed) {
          if (!this.running) {
            await deliveriesRepo.release(this.db, d.id, d.claim_token);
            continue;
          }
          const p: Promise<unknown> = this.deliver(d).catch(this.onError).finally(() => this.inFlight.delete(p));
          this.inFlight.add(p);
        }
      }
    } catch (err) {
      this.onError(err);
    }
    if (this.running) this.schedule(saturated ? 0 : this.opts.pollMs);
  }

  /**
   * One round now, whether started or not: claims what is due (up to the concurrency) and
   * waits for those attempts and their records. Returns how many it attempted. (Tests,
   * and an operator's one-off run.)
   */
  async runOnce(): Promise<number> {
    const claimed = await this.claim(this.concurrency);
    await Promise.all(claimed.map((d) => this.deliver(d)));
    return claimed.length;
  }

  private claim(limit: number): Promise<ClaimedDelivery[]> {
    return this.db.transaction((tx) => deliveriesRepo.claimDue(tx, limit, this.opts.leaseMs, randomUUID()));
  }

  /** One attempt of one claimed delivery, then its record; returns the delivery's new status. */
  private deliver(d: ClaimedDelivery): Promise<DeliveryStatus | undefined> {
    const tracer = this.opts.tracer;
    if (!tracer) return this.attempt(d);
    // The attempt continues the trace of the request that wrote the event (its span's
    // child), or starts one when the event was written untraced.
    let host: string | undefined;
    let port: number | undefined;
    try {
      if (d.url !== null) {
        const u = new URL(d.url);
        host = u.hostname;
        port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
      }
    } catch { /* recorded as not sent by the attempt */ }
    return tracer.startActiveSpan('webhook.deliver', {
      kind: SpanKind.CLIENT,
      attributes: {
        [ATTR.serverAddress]: host, [ATTR.serverPort]: port, [ATTR.entityId]: d.entity_id, [WEBHOOK_ATTR.eventId]: d.event_id,
        [WEBHOOK_ATTR.eventType]: d.type, [WEBHOOK_ATTR.deliveryId]: d.id, [WEBHOOK_ATTR.attempt]: d.attempt_count,
      },
    }, contextOf(d.traceparent), async (span) => {
      try {
        const status = await this.attempt(d, (out) => {
          if (out.statusCode !== null) span.setAttribute(ATTR.httpStatus, out.statusCode);
          if (out.statusCode === null || out.statusCode >= 300 || out.interrupted) {
            span.setStatus({ code: SpanStatusCode.ERROR, message: out.interrupted ? 'interrupted' : out.statusCode === null ? 'not sent' : `HTTP ${out.statusCode}` });
          }
        });
        span.setAttribute(WEBHOOK_ATTR.outcome, status === 'PENDING' ? 'RETRY' : status ?? 'CLAIM_LOST');
        return status;
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
        throw err;
      } finally {
        span.end();
      }
    });
  }

  private async attempt(d: ClaimedDelivery, observe?: (out: AttemptOutcome) => void): Promise<DeliveryStatus | undefined> {
    const startedAt = new Date();
    let out: AttemptOutcome;
    try {
      if (d.url === null) throw new Error('the event has no URL of its own and its webhook endpoint does not exist (any more)');
      const body = envelope(d);
      const signature = signWebhook(await this.secrets.signingSecretsFor(d), body, Math.floor(Date.now() / 1000));
      out = await sendWebhook({
        url: d.url,
        extraHeaders: this.secrets.headersToSend(d.entity_id, d.headers_enc, d.headers),
        paydHeaders: {
          [SIGNATURE_HEADER]: signature,
          'payd-event-id': d.event_id,
          'payd-event-type': d.type,
          'payd-delivery-id': d.id,
        },
        body,
        timeoutMs: this.opts.timeoutMs,
        allowPrivateTargets: this.opts.allowPrivateTargets,
        stop: this.stopCtl.signal,
      });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      out = { statusCode: null, error: `not sent: ${message}`.slice(0, 500), responseBody: null, durationMs: Date.now() - startedAt.getTime(), interrupted: false };
    }
    observe?.(out);
    const delivered = !out.interrupted && out.statusCode !== null && out.statusCode >= 200 && out.statusCode < 300;
    return this.db.transaction((tx) =>
      deliveriesRepo.recordAttempt(tx, {
        id: randomUUID(),
        deliveryId: d.id,
        claimToken: d.claim_token,
        attemptNumber: d.attempt_count,
        url: d.url,
        startedAt,
        durationMs: out.durationMs,
        statusCode: out.statusCode,
        error: out.error,
        responseBody: out.responseBody,
        delivered,
        retryInMs: out.interrupted ? 0 : retryDelayMs(d.attempt_count, this.opts.backoffBaseMs, this.opts.backoffMaxMs),
        maxAgeMs: out.interrupted ? null : this.opts.maxAgeMs,
      }),
    );
  }
}
