// Shutdown of background work: after SIGTERM a worker claims nothing new and gets part
// of the grace period (PAYD_SHUTDOWN_GRACE_MS) to finish what it already started; the
// rest of the grace is kept for recording the outcomes and closing the database before
// main.ts exits the process by force.

/** The part of the shutdown grace given to background work to finish calls in flight. */
export function drainBudgetMs(graceMs: number): number {
  return Math.max(0, graceMs - Math.min(2000, Math.floor(graceMs / 5)));
}

/** Waits for `work` at most `ms`; true when it settled in time (its outcome is the caller's). */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
