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
 * A read from the database shared by the gauges of one scrape: prom-client starts every
 * metric's collect() in the same turn, so the read under way is shared and forgotten as
 * soon as it settles. A read that fails gives undefined: the gauges keep their last values
 * rather than failing /metrics.
 */
export function sharedRead<T>(read: () => Promise<T>): () => Promise<T | undefined> {
  let last: Promise<T | undefined> | undefined;
  return () => {
    last ??= read().catch(() => undefined).finally(() => { last = undefined; });
    return last;
  };
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
