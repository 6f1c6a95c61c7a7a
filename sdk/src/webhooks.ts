// Webhook verification for merchants: checks the payd-signature header of a call and
// gives the event. Web Crypto only (globalThis.crypto.subtle): it runs in Node 20+, Deno,
// Bun and edge runtimes, with no dependency.
//
//   payd-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
//
// During a secret rotation the header carries one v1 per valid secret.

import type { WebhookEvent } from './types.ts';

export class WebhookSignatureError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookSignatureError';
  }
}

const encoder = new TextEncoder();

function toBytes(body: string | Uint8Array): Uint8Array {
  return typeof body === 'string' ? encoder.encode(body) : body;
}

function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

function equalTimeSafe(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

async function hmac(secret: string, timestamp: number, body: Uint8Array): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const prefix = encoder.encode(`${timestamp}.`);
  const message = new Uint8Array(prefix.length + body.length);
  message.set(prefix, 0);
  message.set(body, prefix.length);
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, message));
}

export interface VerifyOptions {
  /** Largest distance between the header's timestamp and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** Now, in unix seconds (tests). */
  nowSeconds?: number;
}

/**
 * Verifies a webhook call and returns its event. `rawBody` is the body exactly as
 * received (before any JSON parsing); `header` the payd-signature header; `secret` the
 * entity's signing secret (or several, while you move to a new one). Throws
 * WebhookSignatureError when the signature or its timestamp does not hold.
 */
export async function constructEvent(rawBody: string | Uint8Array, header: string | null | undefined,
  secret: string | readonly string[], options: VerifyOptions = {}): Promise<WebhookEvent> {
  if (typeof header !== 'string' || header === '') throw new WebhookSignatureError('no payd-signature header');
  let timestamp: number | undefined;
  const candidates: Uint8Array[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) candidates.push(hexToBytes(value));
  }
  if (timestamp === undefined || candidates.length === 0) throw new WebhookSignatureError('the payd-signature header has no t= or no v1=');
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? 300)) throw new WebhookSignatureError('the signature is too old (or from the future): a replayed call?');
  const body = toBytes(rawBody);
  for (const s of typeof secret === 'string' ? [secret] : secret) {
    if (!s) continue;
    const expected = await hmac(s, timestamp, body);
    if (candidates.some((c) => equalTimeSafe(c, expected))) {
      return JSON.parse(typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody)) as WebhookEvent;
    }
  }
  throw new WebhookSignatureError('no v1 signature matches the secret');
}

/** The payd-signature header for a body (what payd sends; for tests of a receiver, and payd listen). */
export async function signPayload(rawBody: string | Uint8Array, secret: string, timestamp = Math.floor(Date.now() / 1000)): Promise<string> {
  const mac = await hmac(secret, timestamp, toBytes(rawBody));
  return `t=${timestamp},v1=${Array.from(mac, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}
