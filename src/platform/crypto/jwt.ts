// payd's own JWTs (access tokens of the payment API, of users, of the Management API):
// jose signs and verifies them; this module holds only what all of them require of a
// token, so that each caller states its issuer, audience and typ and nothing else:
//   - the algorithm is the key's, and only it (no alg confusion, no "none");
//   - exp, iat, sub and jti are present (sub and jti strings), iat not in the future;
//   - 5 s of clock tolerance between payd processes.
// Failures are JwsError with a short reason ("expired", "bad signature", ...), which the
// callers turn into their own answers (invalid_token and the like).
// The payment API's access tokens are verified once per token and process (a cache in
// src/identity/oauth/access-tokens.ts), so jose's cost falls on issuance and first use.
import { type KeyObject, webcrypto } from 'node:crypto';
import { CompactSign, type JWTPayload, type ProtectedHeaderParameters, decodeJwt as decodePayload, decodeProtectedHeader, errors, jwtVerify } from 'jose';

/** The JWS algorithms of payd's own tokens (HS256 today; EdDSA kept verifiable by the same rules). */
export type JwsAlg = 'HS256' | 'EdDSA';

export class JwsError extends Error {
  override name = 'JwsError';
}

export interface Decoded {
  header: ProtectedHeaderParameters;
  payload: JWTPayload;
}

/**
 * The header and claims of a compact JWT, unverified (to pick the key by kid, or the
 * client by aud, before verifying). Throws JwsError('malformed') when it is not one.
 */
export function decodeJwt(token: string): Decoded {
  try {
    return { header: decodeProtectedHeader(token), payload: decodePayload(token) };
  } catch {
    throw new JwsError('malformed');
  }
}

// jose takes an HMAC secret as a KeyObject by exporting it and importing it into WebCrypto
// on every signature and verification; the keystore keeps its KeyObjects, so each is
// imported once here (sign and verify, not extractable) and jose is given the CryptoKey.
const hmacKeys = new WeakMap<KeyObject, Promise<webcrypto.CryptoKey>>();

function joseKey(alg: JwsAlg, key: KeyObject): KeyObject | Promise<webcrypto.CryptoKey> {
  if (alg !== 'HS256' || key.type !== 'secret') return key;
  let imported = hmacKeys.get(key);
  if (!imported) {
    imported = webcrypto.subtle.importKey('raw', key.export(), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
    hmacKeys.set(key, imported);
  }
  return imported;
}

const utf8 = new TextEncoder();

// WebCrypto computes each HMAC on libuv's thread pool: a signature started on its own wakes
// a pool thread, whose answer then wakes the event loop, kernel work worth several times
// the HMAC. The signatures asked for during one turn of the event loop (a token endpoint
// under load gets several requests a turn) start together at its end: the woken threads
// take them one after another and their answers come back together.
let waiting: Array<() => void> | undefined;
function endOfTurn(): Promise<void> {
  return new Promise((resolve) => {
    if (!waiting) {
      waiting = [];
      setImmediate(() => {
        const now = waiting!;
        waiting = undefined;
        for (const go of now) go();
      });
    }
    waiting.push(resolve);
  });
}

/**
 * Signs a JWT with exactly these header parameters (plus alg) and claims. jose's
 * CompactSign over the claims' JSON (the bytes SignJWT would sign): SignJWT first copies
 * the claims with structuredClone, for builder methods payd does not use.
 */
export async function signJwt(alg: JwsAlg, header: { kid?: string; typ: string }, payload: Record<string, unknown>, key: KeyObject): Promise<string> {
  await endOfTurn();
  return new CompactSign(utf8.encode(JSON.stringify(payload))).setProtectedHeader({ alg, ...header }).sign(await joseKey(alg, key));
}

export interface VerifyOptions {
  issuer: string;
  audience: string;
  typ: string;
  clockToleranceSeconds?: number;
}

/** jose's failure, as the reason payd states. */
function reason(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'expired';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'bad signature';
  if (err instanceof errors.JOSEAlgNotAllowed) return 'unexpected header';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.reason === 'missing') return 'missing claims';
    return ({ typ: 'unexpected header', iss: 'unexpected issuer', aud: 'unexpected audience', nbf: 'not yet valid' } as Record<string, string>)[err.claim] ?? 'invalid claims';
  }
  if (err instanceof errors.JOSEError) return 'malformed';
  throw err;
}

/**
 * Verifies the signature with the algorithm the key is for, and the registered claims;
 * returns the claims. Throws JwsError with the reason otherwise.
 */
export async function verifyJwt(alg: JwsAlg, token: string, key: KeyObject, opts: VerifyOptions): Promise<JWTPayload> {
  const tolerance = opts.clockToleranceSeconds ?? 5;
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, await joseKey(alg, key), {
      algorithms: [alg], issuer: opts.issuer, audience: opts.audience, typ: opts.typ,
      requiredClaims: ['exp', 'iat', 'sub', 'jti'], clockTolerance: tolerance,
    }));
  } catch (err) {
    throw new JwsError(reason(err));
  }
  if (typeof payload.sub !== 'string' || typeof payload.jti !== 'string') throw new JwsError('missing claims');
  if (payload.iat! > Math.floor(Date.now() / 1000) + tolerance) throw new JwsError('issued in the future');
  return payload;
}
