// hmacSha256 (src/platform/crypto/hmac.ts) is HMAC-SHA-256 as node:crypto computes it:
// RFC 4231's test cases, and seeded random keys shorter than, as long as and longer than
// SHA-256's 64-byte block, with ASCII and non-ASCII messages. The card fingerprints
// stored before it (createHmac) must stay the same.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { hmacSha256 } from '../../src/platform/crypto/hmac.ts';
import { cardFingerprint } from '../../src/payments/cards.ts';

/** A small seeded generator (mulberry32): the same cases every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('hmacSha256', () => {
  it('gives the RFC 4231 test vectors', () => {
    const cases: Array<[Buffer, string, string]> = [
      [Buffer.alloc(20, 0x0b), 'Hi There', 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7'],
      [Buffer.from('Jefe'), 'what do ya want for nothing?', '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843'],
      [Buffer.alloc(131, 0xaa), 'Test Using Larger Than Block-Size Key - Hash Key First', '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54'],
    ];
    for (const [key, message, expected] of cases) assert.equal(hmacSha256(key, message).toString('hex'), expected);
  });

  it('equals createHmac on random keys and messages', () => {
    const next = random(20261125);
    for (const keyLength of [0, 1, 32, 63, 64, 65, 200]) {
      for (let i = 0; i < 20; i++) {
        const key = Buffer.from(Array.from({ length: keyLength }, () => Math.floor(next() * 256)));
        const message = Array.from({ length: Math.floor(next() * 300) }, () => String.fromCodePoint(next() < 0.9 ? 32 + Math.floor(next() * 95) : 0xa0 + Math.floor(next() * 0x2000))).join('');
        assert.equal(hmacSha256(key, message).toString('hex'), createHmac('sha256', key).update(message).digest('hex'), `key of ${keyLength} bytes`);
        assert.equal(hmacSha256(key, message).toString('hex'), createHmac('sha256', key).update(message).digest('hex'), 'again, with the pads kept');
      }
    }
  });

  it('keeps the card fingerprints stored before it', () => {
    const key = Buffer.alloc(32, 9);
    const entity = '6f1d2c3b-4a59-4687-9a0b-1c2d3e4f5a6b';
    const before = createHmac('sha256', key).update(`${entity}:4242424242424242`).digest('base64url').slice(0, 32);
    assert.equal(cardFingerprint(key, entity, '4242424242424242'), before);
  });
});
