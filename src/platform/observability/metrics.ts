// Prometheus metrics: default process metrics plus HTTP request counts and latency
// by route template (never by raw URL, which would leak ids and explode cardinality).
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PoolStats } from '../db/db.ts';

// The gauges read from the database share one read per scrape: prom-client starts every
// metric's collect() in the same turn (Registry.metrics), so the read under way is shared
// and forgotten as soon as it settles. (A timer to forget it never fired between two
// scrapes whose work was all promise callbacks, on PGlite: the second scrape answered
// the first one's values.)

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'payd_' });
  const requests = new Counter({
    name: 'payd_http_requests_total',
    help: 'HTTP requests by method, route template and status code',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'payd_http_request_duration_seconds',
    help: 'HTTP request duration by method and route template',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  return { registry, requests, duration };
}

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * The webhook backlog, read from the database at each scrape (the partial index of
 * pending deliveries answers it): deliveries not made yet, those due now, and how long
 * the oldest due one has waited. A scrape while the database is unreachable keeps the
 * last values rather than failing /metrics.
 */
export function webhookBacklogGauges(registry: Registry, read: () => Promise<{ pending: number; due: number; oldest_due_seconds: number }>): void {
  let last: Promise<{ pending: number; due: number; oldest_due_seconds: number } | undefined> | undefined;
  // One read per scrape, shared by the three gauges.
  const current = () => {
    last ??= read().catch(() => undefined).finally(() => { last = undefined; });
    return last;
  };
  const gauge = (name: string, help: string, pick: (b: { pending: number; due: number; oldest_due_seconds: number }) => number) =>
    new Gauge({
      name, help, registers: [registry],
      async collect() {
        const b = await current();
        if (b) this.set(pick(b));
      },
    });
  gauge('payd_webhook_deliveries_pending', 'Webhook deliveries not made yet (due now or scheduled for a retry)', (b) => b.pending);
  gauge('payd_webhook_deliveries_due', 'Webhook deliveries due now and not made yet', (b) => b.due);
  gauge('payd_webhook_oldest_due_seconds', 'How long the oldest due webhook delivery has waited', (b) => b.oldest_due_seconds);
}

/**
 * Operations still PENDING (a partner that did not answer yet; recovery settles them), by
 * kind, and the age of the oldest: read at each scrape through the partial index on
 * PENDING operations (migration 0002), so its cost does not grow with the table.
 */
export function operationsBacklogGauges(registry: Registry, read: () => Promise<Array<{ kind: string; pending: number; oldest_seconds: number }>>): void {
  let last: Promise<Array<{ kind: string; pending: number; oldest_seconds: number }> | undefined> | undefined;
  const current = () => {
    last ??= read().catch(() => undefined).finally(() => { last = undefined; });
    return last;
  };
  const KINDS = ['CAPTURE', 'REFUND', 'VOID'];
  new Gauge({
    name: 'payd_operations_pending', help: 'Operations (CAPTURE, REFUND, VOID) whose outcome is not known yet, by kind', labelNames: ['kind'] as const, registers: [registry],
    async collect() {
      const rows = await current();
      if (!rows) return;
      for (const kind of KINDS) this.set({ kind }, rows.find((r) => r.kind === kind)?.pending ?? 0);
    },
  });
  new Gauge({
    name: 'payd_operations_oldest_pending_seconds', help: 'How long the oldest PENDING operation has waited since it last changed', registers: [registry],
    async collect() {
      const rows = await current();
      if (rows) this.set(rows.reduce((m, r) => Math.max(m, r.oldest_seconds), 0));
    },
  });
}

/** The age ranges of payd_3ds_challenges_pending, in seconds (the last is open). */
export const CHALLENGE_AGES = [
  { age: 'under_5m', from: 0 }, { age: '5m_to_15m', from: 300 }, { age: '15m_to_30m', from: 900 },
  { age: '30m_to_1h', from: 1800 }, { age: 'over_1h', from: 3600 },
] as const;

/**
 * 3-D Secure challenges awaiting the shopper (authorizations PENDING with a redirection),
 * by age range, and the age of the oldest: read at each scrape through the partial index
 * of challenges (migration 0040). Past PAYD_CHALLENGE_EXPIRY_SECONDS the recovery worker
 * cancels them, so a count that stays in the ranges past the expiry says it does not run.
 */
export function challengeGauges(registry: Registry, read: () => Promise<{ counts: number[]; oldest_seconds: number }>): void {
  let last: Promise<{ counts: number[]; oldest_seconds: number } | undefined> | undefined;
  const current = () => {
    last ??= read().catch(() => undefined).finally(() => { last = undefined; });
    return last;
  };
  new Gauge({
    name: 'payd_3ds_challenges_pending', help: '3-D Secure challenges awaiting the shopper, by age range since the authorization was sent', labelNames: ['age'] as const, registers: [registry],
    async collect() {
      const c = await current();
      if (!c) return;
      CHALLENGE_AGES.forEach(({ age }, i) => this.set({ age }, c.counts[i] ?? 0));
    },
  });
  new Gauge({
    name: 'payd_3ds_challenge_oldest_pending_seconds', help: 'How long the oldest 3-D Secure challenge has awaited the shopper', registers: [registry],
    async collect() {
      const c = await current();
      if (c) this.set(c.oldest_seconds);
    },
  });
}

export const metricsPlugin = fp<{ metrics: Metrics }>(async function metricsPlugin(app: FastifyInstance, { metrics }) {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    metrics.duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
});

/**
 * The PostgreSQL pool at each scrape: connections in use and idle, the pool's size
 * (PAYD_DB_POOL_SIZE) and the statements or transactions waiting for a connection. A
 * waiting count that stays above zero while the database has CPU to spare says the pool
 * is too small (docs/operations.md, Pool sizing).
 */
export function poolGauges(registry: Registry, stats: () => PoolStats, pool: { prefix: string; of: string } = { prefix: 'payd_db_pool', of: 'PostgreSQL' }): void {
  new Gauge({
    name: `${pool.prefix}_connections`,
    help: `${pool.of} connections of this process, by state (in_use, idle)`,
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const s = stats();
      this.set({ state: 'in_use' }, s.open - s.idle);
      this.set({ state: 'idle' }, s.idle);
    },
  });
  new Gauge({
    name: `${pool.prefix}_max`,
    help: `The most ${pool.of} connections this process opens (PAYD_DB_POOL_SIZE)`,
    registers: [registry],
    collect() {
      this.set(stats().max);
    },
  });
  new Gauge({
    name: `${pool.prefix}_waiting`,
    help: `Statements or transactions of this process waiting for a ${pool.of} connection`,
    registers: [registry],
    collect() {
      this.set(stats().waiting);
    },
  });
}

/** The read replica's pool (DATABASE_READ_URL), as poolGauges gives the primary's: payd_db_replica_pool_*. */
export function replicaPoolGauges(registry: Registry, stats: () => PoolStats): void {
  poolGauges(registry, stats, { prefix: 'payd_db_replica_pool', of: 'read-replica' });
}

/**
 * Reads that allow staleness (platform/db/reads.ts): where each was served and why, and
 * the replica's staleness bound at each scrape (absent while no replica is usable).
 */
export function readMetrics(registry: Registry, lagMs: () => Promise<number | undefined>) {
  const reads = new Counter({
    name: 'payd_db_reads_total',
    help: 'Reads that allow staleness, by where they were served (replica, primary) and why',
    labelNames: ['source', 'reason'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'payd_db_replica_lag_seconds',
    help: 'Upper bound of the read replica\'s staleness (DATABASE_READ_URL); NaN while it is not usable',
    registers: [registry],
    async collect() {
      const lag = await lagMs().catch(() => undefined);
      this.set(lag === undefined ? Number.NaN : lag / 1000);
    },
  });
  return reads;
}
