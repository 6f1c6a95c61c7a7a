// Compact JWS with Ed25519 (alg EdDSA) on node:crypto's synchronous sign/verify, for
// the hot path of access tokens. jose goes through WebCrypto, which costs ~450 µs per
// Ed25519 operation on Node 20 against ~60 µs here (bench/ and docs/performance.md).
// Tokens are interoperable: tests verify ours with jose and jose's with ours.
import { type KeyObject, sign, verify } from 'node:crypto';

export class JwsError extends Error {
  override name = 'JwsError';
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

export function signEdDsaJwt(header: Record<string, unknown>, payload: Record<string, unknown>, key: KeyObject): string {
  const input = `${b64({ ...header, alg: 'EdDSA' })}.${b64(payload)}`;
  return `${input}.${sign(null, Buffer.from(input), key).toString('base64url')}`;
}

export interface Decoded {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signingInput: string;
  signature: Buffer;
}

export function decodeJwt(token: string): Decoded {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]*$/.test(p))) throw new JwsError('malformed');
  try {
    const header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as unknown;
    const payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as unknown;
    if (!header || typeof header !== 'object' || !payload || typeof payload !== 'object' || Array.isArray(payload)) throw new Error();
    return { header: header as Record<string, unknown>, payload: payload as Record<string, unknown>, signingInput: `${parts[0]}.${parts[1]}`, signature: Buffer.from(parts[2]!, 'base64url') };
  } catch {
    throw new JwsError('malformed');
  }
}

export interface VerifyOptions {
  issuer: string;
  audience: string;
  typ: string;
  clockToleranceSeconds?: number;
}

/** Checks the signature (EdDSA only) and the registered claims; returns the payload. */
export function verifyEdDsaJwt(decoded: Decoded, key: KeyObject, opts: VerifyOptions): Record<string, unknown> {
  const { header, payload } = decoded;
  if (header.alg !== 'EdDSA' || header.typ !== opts.typ || header.crit !== undefined) throw new JwsError('unexpected header');
  if (!verify(null, Buffer.from(decoded.signingInput), key, decoded.signature)) throw new JwsError('bad signature');
  const now = Math.floor(Date.now() / 1000);
  const tolerance = opts.clockToleranceSeconds ?? 5;
  const { iss, aud, exp, iat, nbf, sub, jti } = payload;
  if (iss !== opts.issuer) throw new JwsError('unexpected issuer');
  if (!(aud === opts.audience || (Array.isArray(aud) && aud.includes(opts.audience)))) throw new JwsError('unexpected audience');
  if (typeof exp !== 'number' || typeof iat !== 'number' || typeof sub !== 'string' || typeof jti !== 'string') throw new JwsError('missing claims');
  if (exp <= now - tolerance) throw new JwsError('expired');
  if (typeof nbf === 'number' && nbf > now + tolerance) throw new JwsError('not yet valid');
  if (iat > now + tolerance) throw new JwsError('issued in the future');
  return payload;
}
