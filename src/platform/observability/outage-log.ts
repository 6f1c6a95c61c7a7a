// What the background workers (recovery, the webhook dispatcher) log while the database
// is away: one warning when a tick first meets an unreachable database, nothing while it
// stays away (each failed tick is counted), and one info line when a tick succeeds again,
// with the ticks that failed, per worker, and how long it lasted. Any other failure is
// logged at once, with its stack, as before (docs/operations.md, Database outages).
import { isConnectionFailure } from '../db/errors.ts';

interface OutageLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export class DatabaseOutageLog {
  /** When the current outage was first met (ms since the epoch), or undefined while the database answers. */
  private since: number | undefined;
  private ticksFailed: Record<string, number> = {};

  constructor(
    private readonly log: OutageLogger,
    private readonly now: () => number = Date.now,
  ) {}

  /** True while the database is known to be away. */
  get down(): boolean {
    return this.since !== undefined;
  }

  /** A tick of `worker` failed; `message` is the line for a failure that is not the database's absence. */
  failed(worker: string, err: unknown, message: string): void {
    if (!isConnectionFailure(err)) {
      this.log.error({ err, worker }, message);
      return;
    }
    this.ticksFailed[worker] = (this.ticksFailed[worker] ?? 0) + 1;
    if (this.since !== undefined) return;
    this.since = this.now();
    const reason = err instanceof Error ? err.message : String(err);
    this.log.warn({ worker, reason }, 'database unreachable: background work pauses and retries each tick (logged again once it is back)');
  }

  /** A tick of `worker` reached the database: ends an outage, with its counts. */
  succeeded(worker: string): void {
    if (this.since === undefined) return;
    const downSeconds = Math.round((this.now() - this.since) / 100) / 10;
    this.log.info({ worker, downSeconds, ticksFailed: this.ticksFailed }, 'database reachable again: background work resumed');
    this.since = undefined;
    this.ticksFailed = {};
  }
}
