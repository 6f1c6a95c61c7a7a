// A busy row must not take the pool (issue 45). Statements that may wait for one row's
// lock (a payment's, named by its key) run one at a time per row in this process: the
// first holds a connection while it waits (at most lock_timeout), the others wait their
// turn here, in memory, holding nothing. So a row locked elsewhere (another process's
// transaction, a frozen one's) costs this process one connection, whatever the number of
// requests for it, and every other request still finds the pool.
//
// When the turn's holder gave up on the lock (lock_timeout), the row is known to be held
// elsewhere for longer than payd waits: those waiting are refused at once as busy rather
// than each waiting its own lock_timeout in turn. A turn is otherwise awaited at most
// maxWaitMs (a statement's limit), then refused busy too.
import { DatabaseBusyError, isLockTimeout } from './errors.ts';

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class RowGate {
  /** A key present: its turn is taken; the list holds those waiting, oldest first. */
  private readonly turns = new Map<string, Waiter[]>();

  constructor(private readonly maxWaitMs: number) {}

  /** Runs fn when no other fn of this key runs in this process (FIFO); DatabaseBusyError when the turn does not come. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const waiting = this.turns.get(key);
    if (waiting) await this.wait(waiting);
    else this.turns.set(key, []);
    try {
      return await fn();
    } catch (err) {
      if (isLockTimeout(err)) this.refuseWaiting(key);
      throw err;
    } finally {
      this.handOver(key);
    }
  }

  /** How many keys have a turn taken (for tests and metrics). */
  get busyKeys(): number {
    return this.turns.size;
  }

  private wait(waiting: Waiter[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const i = waiting.indexOf(w);
          if (i >= 0) waiting.splice(i, 1);
          reject(new DatabaseBusyError());
        }, this.maxWaitMs),
      };
      waiting.push(w);
    });
  }

  private handOver(key: string): void {
    const waiting = this.turns.get(key);
    const next = waiting?.shift();
    if (!next) {
      this.turns.delete(key);
      return;
    }
    clearTimeout(next.timer);
    next.resolve();
  }

  private refuseWaiting(key: string): void {
    for (const w of this.turns.get(key)?.splice(0) ?? []) {
      clearTimeout(w.timer);
      w.reject(new DatabaseBusyError());
    }
  }
}
