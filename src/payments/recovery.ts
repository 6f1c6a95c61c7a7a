// The recovery step: payments whose partner transactions stayed PENDING past a grace
// period (a process died between recording an operation and recording the partner's
// answer, or a partner timed out) are settled by asking the partner with the same key.
import type { Db } from '../platform/db/index.ts';
import { paymentsRepo } from './payments.repo.ts';
import type { PaymentsService } from './payments.service.ts';

export class Recovery {
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly db: Db,
    private readonly payments: PaymentsService,
    private readonly graceSeconds = 60,
  ) {}

  /** One pass; returns how many payments it looked at. */
  async runOnce(graceSeconds = this.graceSeconds, limit = 100): Promise<number> {
    const stale = await paymentsRepo.stalePayments(this.db, graceSeconds, limit);
    for (const s of stale) {
      const p = await paymentsRepo.get(this.db, s.entity_id, s.id);
      if (p) await this.payments.settle(p, { recover: true });
    }
    return stale.length;
  }

  start(intervalMs = 10_000, onError: (err: unknown) => void = () => {}): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = true;
      this.runOnce().catch(onError).finally(() => {
        this.running = false;
      });
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
