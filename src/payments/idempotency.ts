// Replays of an idempotency key. The spec: a request whose key was already processed
// is answered 409 with resource_id; a replay arriving while the first call is in
// flight is held for a bounded number of attempts first, so that resource_id then
// names a settled outcome. If the first call never completes, the replay still gets
// the 409 (detail says so) and GET /v2/payments/{id} settles the state.

export interface HoldConfig {
  holdAttempts: number;
  holdIntervalMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads the first request's record, waiting while it is in flight; undefined when the key is new. */
export async function holdWhileInFlight<T>(
  read: () => Promise<T | undefined>,
  inFlight: (record: T) => boolean,
  config: HoldConfig,
): Promise<T | undefined> {
  let record = await read();
  for (let attempt = 0; record && inFlight(record) && attempt < config.holdAttempts; attempt++) {
    await sleep(config.holdIntervalMs);
    record = await read();
  }
  return record;
}
