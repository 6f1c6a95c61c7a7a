// Compact JWS on node:crypto's synchronous primitives, for the hot path of access
// tokens: HS256 (HMAC-SHA256, ~3 µs to sign or verify) and EdDSA (Ed25519, ~50 µs to
// sign, ~135 µs to verify on this machine). jose goes through WebCrypto, which costs
// ~450 µs per Ed25519 operation on Node 20 (bench/ and docs/performance.md).
// Tokens are interoperable: tests verify ours with jose and jose's with ours.
import { type KeyObject, createHmac, sign, timingSafeEqual, verify } from 'node:crypto';

export type JwsAlg = 'HS256' | 'EdDSA';

export class JwsError extends Error {
  override name = 'JwsError';
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function signature(alg: JwsAlg, input: string, key: KeyObject): Buffer {
  return alg === 'HS256' ? createHmac('sha256', key).update(input).digest() : sign(null, Buffer.from(input), key);
}

/** Signs a JWT; key is the HMAC secret (HS256) or the Ed25519 private key (EdDSA). */
export function signJwt(alg: JwsAlg, header: Record<string, unknown>, payload: Record<string, unknown>, key: KeyObject): string {
  const input = `${b64({ ...header, alg })}.${b64(payload)}`;
  return `${input}.${signature(alg, input, key).toString('base64url')}`;
}

export const signEdDsaJwt = (header: Record<string, unknown>, payload: Record<string, unknown>, key: KeyObject) =>
  signJwt('EdDSA', header, payload, key);

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

function signatureValid(alg: JwsAlg, decoded: Decoded, key: KeyObject): boolean {
  if (alg === 'EdDSA') return verify(null, Buffer.from(decoded.signingInput), key, decoded.signature);
  const expected = createHmac('sha256', key).update(decoded.signingInput).digest();
  return expected.length === decoded.signature.length && timingSafeEqual(expected, decoded.signature);
}

/**
 * Checks the signature with exactly the algorithm the key is for (the header's alg must
 * match it: no alg confusion, no "none") and the registered claims; returns the payload.
 */
export function verifyJwt(alg: JwsAlg, decoded: Decoded, key: KeyObject, opts: VerifyOptions): Record<string, unknown> {
  const { header, payload } = decoded;
  if (header.alg !== alg || header.typ !== opts.typ || header.crit !== undefined) throw new JwsError('unexpected header');
  if (!signatureValid(alg, decoded, key)) throw new JwsError('bad signature');
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

export const verifyEdDsaJwt = (decoded: Decoded, key: KeyObject, opts: VerifyOptions) => verifyJwt('EdDSA', decoded, key, opts);
