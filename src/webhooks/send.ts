// One HTTP attempt of a webhook: POST the signed JSON body, never follow redirects, stop
// at the timeout, keep the start of the response body for the delivery log.
import { publicTargetProblem, toHeaderPairs, type WebhookHeader } from './target.ts';

export const USER_AGENT = 'payd-webhooks/1';
/** Characters of the response body kept in the delivery log. */
export const RESPONSE_BODY_LIMIT = 2048;

export interface Outgoing {
  url: string;
  /** The target's extra headers (the link's or the endpoint's). */
  extraHeaders: WebhookHeader[];
  /** payd's own headers: signature, event id and type. */
  paydHeaders: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowPrivateTargets: boolean;
  /** Aborted when the worker stops. */
  stop: AbortSignal;
}

export interface AttemptOutcome {
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
  durationMs: number;
  /** The worker stopped during the call: the outcome is unknown. */
  interrupted: boolean;
}

async function readStart(res: Response): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < RESPONSE_BODY_LIMIT * 4) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text.length > RESPONSE_BODY_LIMIT ? `${text.slice(0, RESPONSE_BODY_LIMIT)}…` : text;
}

function describe(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  const cause = e.cause?.code ?? e.cause?.message;
  return (cause ? `${e.message ?? 'request failed'}: ${cause}` : (e.message ?? String(err))).slice(0, 500);
}

function deadline(ms: number): Promise<never> {
  return new Promise((_, reject) => setTimeout(() => reject(new Error('deadline')), ms).unref());
}

export async function sendWebhook(o: Outgoing): Promise<AttemptOutcome> {
  const started = performance.now();
  const timeout = AbortSignal.timeout(o.timeoutMs);
  const signal = AbortSignal.any([timeout, o.stop]);
  const outcome = (partial: Partial<AttemptOutcome>): AttemptOutcome => ({
    statusCode: null, error: null, responseBody: null, interrupted: false,
    durationMs: Math.round(performance.now() - started), ...partial,
  });
  try {
    if (!o.allowPrivateTargets) {
      const refused = await Promise.race([publicTargetProblem(o.url), deadline(o.timeoutMs)]);
      if (refused) return outcome({ error: refused });
    }
    const headers = new Headers(toHeaderPairs(o.extraHeaders));
    for (const [k, v] of Object.entries(o.paydHeaders)) headers.set(k, v);
    headers.set('content-type', 'application/json');
    headers.set('user-agent', USER_AGENT);
    const res = await fetch(o.url, { method: 'POST', headers, body: o.body, redirect: 'manual', signal });
    let responseBody: string | null = null;
    try {
      responseBody = await readStart(res);
    } catch {
      // The status is known; a body cut short (timeout, reset) does not change the outcome.
    }
    const ok = res.status >= 200 && res.status < 300;
    const error = ok ? null : res.status >= 300 && res.status < 400
      ? `redirect ${res.status} not followed (location: ${res.headers.get('location') ?? 'none'})`
      : `HTTP ${res.status}`;
    return outcome({ statusCode: res.status, error, responseBody });
  } catch (err) {
    if (o.stop.aborted) return outcome({ error: 'interrupted: the worker stopped during the call', interrupted: true });
    if (timeout.aborted || (err as Error).message === 'deadline') return outcome({ error: `timeout after ${o.timeoutMs} ms` });
    return outcome({ error: describe(err) });
  }
}
