// Waiting for a state instead of letting time pass: the one way tests wait for something
// the code under test does on its own clock (a process, a worker, a socket). The app's own
// timers are moved with the test clock instead (./clock.ts).

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface WaitOptions {
  /** How long the condition may take before the wait fails (default 20 s). */
  timeout?: number;
  /** How often it is checked (default 50 ms). */
  every?: number;
  /** What is waited for: named in the failure. */
  what?: string;
}

/**
 * Checks condition (every 50 ms) until it returns a value other than undefined, null or
 * false, and returns that value; fails naming `what` after the timeout. A condition that
 * throws fails the wait at once.
 */
export async function waitFor<T>(condition: () => T | Promise<T>, options: WaitOptions = {}): Promise<Exclude<T, undefined | null | false>> {
  const timeout = options.timeout ?? 20_000;
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await condition();
    if (v !== undefined && v !== null && v !== false) return v as Exclude<T, undefined | null | false>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${options.what ?? 'the condition'}`);
    await pause(options.every ?? 50);
  }
}

/**
 * Reads until done(value) holds, everyMs apart, for at most withinMs (default 20 s, every
 * 50 ms); returns the last value read either way, so that the caller's own assertions on
 * it decide (and fail with their messages).
 */
export async function poll<T>(read: () => Promise<T>, done: (value: T) => boolean, options: { withinMs?: number; everyMs?: number } = {}): Promise<T> {
  const deadline = Date.now() + (options.withinMs ?? 20_000);
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await pause(options.everyMs ?? 50);
  }
}
