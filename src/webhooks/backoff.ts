// Retry schedule of webhook deliveries: exponential backoff with jitter, capped.
// With the defaults (base 1 min, cap 1 h): about 1, 2, 4, 8, 16, 32 minutes, then
// hourly; each wait is moved by up to 25 % at random (never above the cap) so that the
// retries of many events do not arrive in waves.

/** Wait after the failure of attempt number `attempt` (1 = the first attempt). */
export function retryDelayMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exponential = baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 40);
  const jittered = exponential * (0.75 + random() * 0.5);
  return Math.round(Math.min(maxMs * (0.75 + random() * 0.25), jittered));
}
