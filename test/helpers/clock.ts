// A clock tests move forward instead of sleeping: the system time plus an offset that
// advance() grows. Given to the app (createTestApp(..., { clock })), it decides client
// session expiry and when the simulators reveal a timed-out call's outcome.
import type { Clock } from '../../src/platform/clock.ts';

export class TestClock {
  private offset = 0;
  /** The clock to hand to the app. */
  readonly now: Clock = () => Date.now() + this.offset;
  /** Moves the clock forward by ms (time keeps running from there). */
  advance(ms: number): void {
    this.offset += ms;
  }
}
