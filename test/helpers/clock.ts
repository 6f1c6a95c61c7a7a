// A clock tests move forward instead of sleeping: the system time plus an offset that
// advance() grows. Given to the app (createTestApp(..., { clock })), it decides client
// session expiry and when the simulators reveal a timed-out call's outcome.
import type { Clock } from '../../src/platform/clock.ts';

export class TestClock {
  private offset = 0;
  private frozenAt: number | undefined;
  /** The clock to hand to the app. */
  readonly now: Clock = () => (this.frozenAt ?? Date.now()) + this.offset;
  /** Moves the clock forward by ms (time keeps running from there, unless frozen). */
  advance(ms: number): void {
    this.offset += ms;
  }
  /** Stops the clock where it is: only advance() moves it (for windows shorter than a slow host's requests). */
  freeze(): void {
    this.frozenAt ??= Date.now();
  }
}
