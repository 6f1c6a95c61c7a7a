// The payd-signature header of webhook calls, and its verification for merchants.
// This file depends on node:crypto only, so that a merchant can copy it as is.
//
//   payd-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
//
// During a secret rotation the header carries one v1 per valid secret (newest first).
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'payd-signature';

function hmacHex(secret: string, timestamp: number, rawBody: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(rawBody).digest('hex');
}

/** The payd-signature header value for a body sent at `timestamp` (unix seconds). */
export function signWebhook(secrets: readonly string[], rawBody: string | Buffer, timestamp: number): string {
  if (secrets.length === 0) throw new Error('signWebhook needs at least one secret');
  return [`t=${timestamp}`, ...secrets.map((s) => `v1=${hmacHex(s, timestamp, rawBody)}`)].join(',');
}

/**
 * True when `header` (the payd-signature header) carries a v1 signature of `rawBody` made
 * with `secret`, and its timestamp is within `toleranceSeconds` of now (replay guard).
 * rawBody must be the bytes received, before any JSON parsing.
 */
export function verifyWebhookSignature(
  secret: string,
  header: string | undefined | null,
  rawBody: string | Buffer,
  toleranceSeconds = 300,
  nowSeconds = Math.floor(Date.now() / 1000),
): boolean {
  if (typeof header !== 'string' || !secret) return false;
  let timestamp: number | undefined;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) candidates.push(value);
  }
  if (timestamp === undefined || candidates.length === 0) return false;
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(hmacHex(secret, timestamp, rawBody), 'hex');
  return candidates.some((c) => timingSafeEqual(Buffer.from(c, 'hex'), expected));
}
