// The recovery step: payments whose partner transactions or operations stayed PENDING
// past a grace period (a process died between recording an operation and recording the
// partner's answer, or before finalizing it, or a partner timed out) are settled by
// asking the partner with the same key. A worker settles a payment only while it holds
// the payment's claim (a lease renewed before each partner call), so that two payd
// processes never resend the same transaction at once (docs/decisions.md, "Recovery").
// The same pass expires the 3-D Secure challenges shoppers left for longer than
// PAYD_CHALLENGE_EXPIRY_SECONDS (PaymentsService.expireChallenges), under the same claim.
import { randomUUID } from 'node:crypto';
import type { Db } from '../platform/db/index.ts';
import { faultPoint } from '../platform/fault-points.ts';
import { settledWithin } from '../platform/lifecycle.ts';
import { type Clock, systemClock } from '../platform/clock.ts';
import { ATTR, inSpan, SpanKind, type Tracer } from '../platform/observability/tracing.ts';
import { paymentsRepo } from './payments.repo.ts';
import type { PaymentsService } from './payments.service.ts';

export class Recovery {
  private timer: NodeJS.Timeout | undefined;
  /** The pass under way, if any. */
  private pass: Promise<unknown> | undefined;
  private stopped: Promise<void> | undefined;
  /** This worker's identity in recovery claims. */
  private readonly owner = randomUUID();

  constructor(
    private readonly db: Db,
    private readonly payments: PaymentsService,
    private readonly graceSeconds = 60,
    private readonly challenges: { expirySeconds: number; clock?: Clock } = { expirySeconds: 1800 },
    /** Tracing on: each payment settled is a span (recovery.settle), parent of its statements and partner calls. */
    private readonly tracer?: Tracer,
  ) {}

  /**
   * How long a claim lasts: longer than one partner call with its sync (the grace is
   * longer than the partner timeout, enforced at start), renewed before each call.
   */
  private get leaseSeconds(): number {
    return 2 * this.graceSeconds + 5;
  }

  /** One pass; returns how many payments it settled (claimed and looked at). */
  async runOnce(graceSeconds = this.graceSeconds, limit = 100): Promise<number> {
    const stale = await paymentsRepo.stalePayments(this.db, graceSeconds, limit);
    let settled = 0;
    for (const s of stale) {
      if (this.stopped) break; // stopping: claim nothing more, finish only what is under way
      settled += this.tracer
        ? await inSpan(this.tracer, 'recovery.settle', SpanKind.INTERNAL, { [ATTR.entityId]: s.entity_id, 'payd.payment_id': s.id }, () => this.recoverOne(s))
        : await this.recoverOne(s);
    }
    return settled + (await this.expireChallenges(limit));
  }

  /** Claims and settles one stale payment: 1 when this worker settled it, 0 when another has it. */
  private async recoverOne(s: { id: string; entity_id: string }): Promise<number> {
    const claim = () => paymentsRepo.claimRecovery(this.db, s.id, this.owner, this.leaseSeconds);
    if (!(await claim())) return 0; // another worker has it
    try {
      faultPoint('recovery:after-claim');
      const p = await paymentsRepo.get(this.db, s.entity_id, s.id);
      if (p) await this.payments.settle(p, { recover: true, renew: claim });
      return 1;
    } finally {
      await paymentsRepo.releaseRecovery(this.db, s.id, this.owner);
    }
  }

  /** Abandoned 3-D Secure challenges, claimed as above; returns how many payments it looked at. */
  private async expireChallenges(limit: number): Promise<number> {
    const now = (this.challenges.clock ?? systemClock)();
    const left = await paymentsRepo.expiredChallenges(this.db, new Date(now), this.challenges.expirySeconds, limit);
    let done = 0;
    for (const s of left) {
      if (this.stopped) break;
      const claim = () => paymentsRepo.claimRecovery(this.db, s.id, this.owner, this.leaseSeconds);
      if (!(await claim())) continue;
      try {
        const p = await paymentsRepo.get(this.db, s.entity_id, s.id);
        if (p) await this.payments.expireChallenges(p, { now, expirySeconds: this.challenges.expirySeconds, renew: claim });
        done += 1;
      } finally {
        await paymentsRepo.releaseRecovery(this.db, s.id, this.owner);
      }
    }
    return done;
  }

  /** Runs a pass every intervalMs; onError gets a pass that failed, onSuccess one that ran to its end. */
  start(intervalMs = 10_000, onError: (err: unknown) => void = () => {}, onSuccess: () => void = () => {}): void {
    this.stopped = undefined;
    this.timer = setInterval(() => {
      if (this.pass) return;
      this.pass = this.runOnce().then(onSuccess, onError).finally(() => {
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
