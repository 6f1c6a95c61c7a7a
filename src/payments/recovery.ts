// The recovery step: payments whose partner transactions stayed PENDING past a grace
// period (a process died between recording an operation and recording the partner's
// answer, or a partner timed out) are settled by asking the partner with the same key.
import type { Db } from '../platform/db/index.ts';
import { settledWithin } from '../platform/lifecycle.ts';
import { paymentsRepo } from './payments.repo.ts';
import type { PaymentsService } from './payments.service.ts';

export class Recovery {
  private timer: NodeJS.Timeout | undefined;
  /** The pass under way, if any. */
  private pass: Promise<unknown> | undefined;
  private stopped: Promise<void> | undefined;

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
    this.stopped = undefined;
    this.timer = setInterval(() => {
      if (this.pass) return;
      this.pass = this.runOnce().catch(onError).finally(() => {
        this.pass = undefined;
      });
    }, intervalMs);
    this.timer.unref();
  }

  /**
   * Starts no new pass and waits up to `drainMs` for the one under way, so that the
   * partner answers it is waiting for are recorded before the database closes. A pass cut
   * short by the forced exit loses nothing: what it did not settle stays PENDING for the
   * next pass of any worker.
   */
  stop(drainMs = 0): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.stopped ??= this.pass ? settledWithin(this.pass, drainMs).then(() => {}) : Promise.resolve();
    return this.stopped;
  }
}
