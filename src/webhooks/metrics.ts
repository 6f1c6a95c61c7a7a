// The webhook gauges of /metrics: the backlog, and whether this process dispatches (the
// registry and the shared read are platform's).
import { Gauge, type Registry } from 'prom-client';
import { sharedRead } from '../platform/observability/metrics.ts';

/**
 * The webhook backlog, read from the database at each scrape (the partial index of
 * pending deliveries answers it): deliveries not made yet, those due now, and how long
 * the oldest due one has waited. A scrape while the database is unreachable keeps the
 * last values rather than failing /metrics.
 */
export function webhookBacklogGauges(registry: Registry, read: () => Promise<{ pending: number; due: number; oldest_due_seconds: number }>): void {
  const current = sharedRead(read);
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

/** Whether this process's dispatcher claims deliveries (1 in the all and worker roles once started, 0 in the api role and once stopped). */
export function webhookDispatcherGauge(registry: Registry, claiming: () => boolean): void {
  new Gauge({
    name: 'payd_webhook_dispatcher_running', help: 'Whether this process\'s webhook dispatcher claims deliveries (1) or not (0: the api role, or stopped)', registers: [registry],
    collect() {
      this.set(claiming() ? 1 : 0);
    },
  });
}
