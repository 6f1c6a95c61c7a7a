// HMAC-SHA-256 (RFC 2104) for hot paths: H((K ^ opad) || H((K ^ ipad) || m)), from two
// one-shot digests (crypto.hash) over pads prepared once per key. The bytes are those of
// createHmac('sha256', key) (test/platform/hmac.test.ts checks it on keys shorter than,
// equal to and longer than the block). A Hmac object looks SHA-256 up in OpenSSL on
// every construction: 1.4% of the CPU of a payment creation, for its card fingerprint
// (docs/performance.md, session 19); crypto.hash keeps the digest it looked up.
import { hash } from 'node:crypto';

const BLOCK = 64; // SHA-256's block size, in bytes

interface Pads {
  inner: Buffer;
  outer: Buffer;
}
const padsOf = new WeakMap<Buffer, Pads>();

function pads(key: Buffer): Pads {
  let p = padsOf.get(key);
  if (p) return p;
  const k = Buffer.alloc(BLOCK);
  (key.length > BLOCK ? hash('sha256', key, 'buffer') : key).copy(k);
  p = { inner: Buffer.alloc(BLOCK), outer: Buffer.alloc(BLOCK) };
  for (let i = 0; i < BLOCK; i++) {
    p.inner[i] = k[i]! ^ 0x36;
    p.outer[i] = k[i]! ^ 0x5c;
  }
  padsOf.set(key, p);
  return p;
}

/** HMAC-SHA-256 of `message` (UTF-8) under `key`: the 32 bytes createHmac('sha256', key) gives. */
export function hmacSha256(key: Buffer, message: string): Buffer {
  const { inner, outer } = pads(key);
  const m = Buffer.from(message, 'utf8');
  const innerDigest = hash('sha256', Buffer.concat([inner, m], BLOCK + m.length), 'buffer');
  return hash('sha256', Buffer.concat([outer, innerDigest], BLOCK + innerDigest.length), 'buffer');
}
