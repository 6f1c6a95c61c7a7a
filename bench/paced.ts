// An open-loop load at a fixed rate: flows (a create then its capture, or one request) are
// started on a schedule, one every 1/rate seconds whatever the answers, over a keep-alive
// pool of at most `connections` sockets, and each request's latency is taken from the moment it
// was sent (the previous answer, for a flow's later requests). The schedule never waits for
// an answer (a request that finds every socket busy waits in the pool and that wait counts),
// so a slow server cannot slow the load down (no coordinated omission); a flow the client's
// own timer started more than 2 ms late is counted (`late`).
// autocannon's overallRate is not that: it lets every connection send until the second's
// count is reached, then stops them until the next second, so its p99 measures the queue of
// that burst (the bare hello route showed p99 34 ms at 400 requests/s there).
import http from 'node:http';
import { randomUUID } from 'node:crypto';

export interface PacedRequest {
  method: 'GET' | 'POST';
  /** The path, given what the flow's earlier answers said (their parsed JSON bodies). */
  path: (earlier: unknown[]) => string;
  headers?: Record<string, string>;
  body?: string;
  /** Sent with a fresh x-idempotency-key (or the header named), as the SDK does. */
  keyed?: string;
}

export interface PacedResult {
  flowsPerSecond: number;
  requests: number;
  p50: number;
  p99: number;
  max: number;
  /** Flows that ended on an answer that was not 2xx, or on no answer (the sum of `statuses`). */
  bad: number;
  /** Flows the client's own timer started more than 2 ms after their scheduled time. */
  late: number;
  /** Flows whose every request was answered 2xx. */
  completed: number;
  /** The answers that were not 2xx, by status ("error" for a request that got no answer). */
  statuses: Record<string, number>;
  /** The slowest requests: when each was sent (ms from the start), its latency, its place in the flow. */
  slowest: Array<{ at: number; ms: number; step: number }>;
}

function send(agent: http.Agent, base: URL, r: PacedRequest, earlier: unknown[]): Promise<{ status: number; json: unknown }> {
  const headers: Record<string, string> = { ...(r.headers ?? {}) };
  if (r.keyed) headers[r.keyed] = randomUUID();
  if (r.body !== undefined) headers['content-length'] = String(Buffer.byteLength(r.body));
  return new Promise((resolve, reject) => {
    const req = http.request({ host: base.hostname, port: base.port, method: r.method, path: r.path(earlier), headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
        resolve({ status: res.statusCode ?? 0, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(r.body);
  });
}

/** The nearest-rank quantile of ascending values (0 when there are none). */
export const quantile = (sorted: number[], q: number): number => sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]! : 0;

/**
 * Runs `flow` at `rate` flows per second for `seconds`, against `baseUrl`; a function gives
 * the i-th flow's requests (flows that differ in turn, as the soak's).
 */
export async function paced(baseUrl: string, flow: PacedRequest[] | ((i: number) => PacedRequest[]), opts: { rate: number; seconds: number; connections: number }): Promise<PacedResult> {
  const base = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  const timed: Array<{ at: number; ms: number; step: number }> = [];
  let late = 0;
  let completed = 0;
  const statuses: Record<string, number> = {};
  const count = (status: string) => { statuses[status] = (statuses[status] ?? 0) + 1; };
  const interval = 1000 / opts.rate;
  const total = Math.round(opts.rate * opts.seconds);
  const running: Array<Promise<void>> = [];
  const t0 = performance.now();
  const runFlow = async (requests: PacedRequest[], start: number) => {
    const earlier: unknown[] = [];
    let from = start;
    for (const [step, r] of requests.entries()) {
      try {
        const { status, json } = await send(agent, base, r, earlier);
        const now = performance.now();
        timed.push({ at: from - t0, ms: now - from, step });
        from = now;
        if (status < 200 || status >= 300) return count(String(status));
        earlier.push(json);
      } catch {
        return count('error');
      }
    }
    completed++;
  };
  for (let i = 0; i < total; i++) {
    const due = t0 + i * interval;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const start = performance.now();
    if (start - due > 2) late++;
    running.push(runFlow(typeof flow === 'function' ? flow(i) : flow, start));
  }
  await Promise.all(running);
  const elapsed = (performance.now() - t0) / 1000;
  agent.destroy();
  const sorted = timed.sort((a, b) => a.ms - b.ms).map((t) => t.ms);
  return {
    flowsPerSecond: total / elapsed, requests: timed.length, bad: Object.values(statuses).reduce((a, b) => a + b, 0), late, completed, statuses,
    p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1] ?? 0,
    slowest: timed.slice(-20).reverse(),
  };
}
