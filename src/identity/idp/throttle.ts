// The sign-in throttle (hosted form, SDK password login, password grant): failed attempts
// are rows of idp_login_failures, so every payd process on the database shares them. Each
// attempt is recorded before its password is checked and the others are counted after,
// so parallel guesses cannot slip past (the n-th attempt to be recorded sees the n-1
// before it); a refused attempt is deleted again (it does not lengthen the wait).
//
// Three counts, each over the last WINDOW: failures of this (account, address), of this
// address (any account), and of this account (any address). Past a count's free
// allowance the next attempt must wait a delay that doubles with every further failure
// (1 s, 2 s, 4 s, ... up to maxDelaySeconds), counted from the latest failure of that
// kind: a 429 whose Retry-After is the real wait. The per-account count applies only to
// addresses that have already failed for that account: an address that never failed for
// it (the owner's, usually) is never slowed by failures elsewhere, so failures from many
// addresses cannot lock the owner out; a guess spread over many addresses gets one try
// per address once the account is past its allowance.
import type { Queryable } from '../../platform/db/index.ts';
import type { Clock } from '../../platform/clock.ts';
import { problems } from '../../platform/http/problem.ts';
import { throttleRepo } from './throttle.repo.ts';

export const LOGIN_THROTTLE = {
  /** Failures older than this are forgotten. */
  windowSeconds: 3600,
  /** Free failures per (account, address), per address, per account (for addresses that failed for it) before delays begin. */
  freePerAccountIp: 5,
  freePerIp: 30,
  freePerAccount: 100,
  /** The first delay past the allowance; each further failure doubles it, up to the cap. */
  baseDelaySeconds: 1,
  maxDelaySeconds: 900,
} as const;

/** The seconds still to wait after `failures` failures, the latest at `last`; 0 when none. */
export function waitSeconds(failures: number, free: number, last: Date | null, now: number): number {
  if (failures < free || !last) return 0;
  const delay = Math.min(LOGIN_THROTTLE.baseDelaySeconds * 2 ** Math.min(failures - free, 30), LOGIN_THROTTLE.maxDelaySeconds);
  const until = last.getTime() + delay * 1000;
  return until > now ? Math.ceil((until - now) / 1000) : 0;
}

export class LoginThrottle {
  constructor(private readonly clock: Clock) {}

  /**
   * Records the attempt, then counts the others: resolves with the attempt's id when it may
   * go on (its password may be checked), throws 429 (Retry-After: the real wait) otherwise.
   */
  async begin(q: Queryable, email: string, ip: string): Promise<string> {
    const now = this.clock();
    const id = await throttleRepo.insert(q, email.toLowerCase(), ip, new Date(now));
    const since = new Date(now - LOGIN_THROTTLE.windowSeconds * 1000);
    const c = await throttleRepo.counts(q, email, ip, since, id);
    const wait = Math.max(
      waitSeconds(c.pair, LOGIN_THROTTLE.freePerAccountIp, c.pair_last, now),
      waitSeconds(c.ip, LOGIN_THROTTLE.freePerIp, c.ip_last, now),
      // Only for an address that already failed for this account (see above).
      c.pair > 0 ? waitSeconds(c.account, LOGIN_THROTTLE.freePerAccount, c.account_last, now) : 0,
    );
    if (wait > 0) {
      await this.forget(q, id);
      throw problems.tooManyRequests(`Too many failed sign-in attempts. Try again in ${wait} second${wait === 1 ? '' : 's'}.`, wait);
    }
    return id;
  }

  /** The attempt succeeded: it is not a failure, nor are this address's earlier failures for this account. */
  async succeeded(q: Queryable, id: string, email: string, ip: string): Promise<void> {
    await throttleRepo.deleteWithPair(q, id, email, ip);
  }

  async forget(q: Queryable, id: string): Promise<void> {
    await throttleRepo.delete(q, id);
  }
}
