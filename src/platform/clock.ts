// The time the service reads where a test must be able to move it: expiry of client
// sessions and the simulated partners' delayed outcomes. Production uses the system clock;
// tests pass a clock they advance (test/helpers/clock.ts) instead of sleeping.
// Timestamps written by PostgreSQL (now()) and token lifetimes keep their own time.

/** Milliseconds since the epoch, as Date.now(). */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();
