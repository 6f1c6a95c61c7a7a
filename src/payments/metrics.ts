// The payment gauges of /metrics: PENDING operations and 3-D Secure challenges awaiting the
// shopper (the registry and the shared read are platform's).
import { Gauge, type Registry } from 'prom-client';
import { sharedRead } from '../platform/observability/metrics.ts';

/**
 * Operations still PENDING (a partner that did not answer yet; recovery settles them), by
 * kind, and the age of the oldest: read at each scrape through the partial index on
 * PENDING operations (migration 0002), so its cost does not grow with the table.
 */
export function operationsBacklogGauges(registry: Registry, read: () => Promise<Array<{ kind: string; pending: number; oldest_seconds: number }>>): void {
  const current = sharedRead(read);
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
  const current = sharedRead(read);
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
