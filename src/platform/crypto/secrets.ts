// Random secrets, their hashes, and authenticated encryption with the master key.
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A secret with 256 bits of entropy, with a readable prefix: "payd_sk_" + 43 chars. */
export function generateSecret(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

/** Secrets with 256 bits of entropy are stored as their SHA-256: fast to look up, useless to steal. */
export function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

const digests = new WeakMap<object, { value: string; digest: Buffer }>();

/**
 * sha256(value), remembered for as long as `holder` lives (a request's headers): a token
 * request hashes its API key for its rate limit and for the key's lookup, once.
 */
export function sha256For(holder: object, value: string): Buffer {
  const seen = digests.get(holder);
  if (seen?.value === value) return seen.digest;
  const digest = sha256(value);
  digests.set(holder, { value, digest });
  return digest;
}

export function safeEqual(a: string, b: string): boolean {
  const ha = sha256(a);
  const hb = sha256(b);
  return timingSafeEqual(ha, hb);
}

const VERSION = 'v1';

/** AES-256-GCM; the associated data binds the ciphertext to its row (e.g. the key id). */
export function encrypt(masterKey: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
}

export function decrypt(masterKey: Buffer, sealed: string, aad: string): string {
  const [version, iv, tag, ct] = sealed.split('.');
  if (version !== VERSION || !iv || !tag || ct === undefined) throw new Error('unknown ciphertext format');
  const decipher = createDecipheriv('aes-256-gcm', masterKey, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
}
