// A card's fingerprint is stored with every card payment and saved card, and matches a
// card seen again (a saved card merged, docs/decisions.md "Cards on file"): its value for
// a given master key must never change between versions. Known answers, computed once
// with HKDF-SHA256 ("payd card fingerprint v1") and HMAC-SHA256 of "<entity>:<number>".
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cardDetails, cardFingerprint, fingerprintKey } from '../../src/payments/cards.ts';

const MASTER = Buffer.alloc(32, 7);
const E1 = '00000000-0000-4000-8000-000000000001';
const E2 = '00000000-0000-4000-8000-000000000002';

describe('card fingerprint', () => {
  it('keeps its known value for a given master key (stable across versions)', () => {
    const key = fingerprintKey(MASTER);
    assert.equal(key.toString('hex'), '76969d7f9336db04fabcc47ea47c9abfc19c64bec70d4d1bb1c2eb40159c1587');
    assert.equal(cardFingerprint(key, E1, '4242424242424242'), '_vBnBA7KH3zki1-sg1ScZ68Gs8abCVUD');
  });

  it('differs between merchants for the same card, and holds no digit of the number', () => {
    const key = fingerprintKey(MASTER);
    assert.equal(cardFingerprint(key, E2, '4242424242424242'), '10EDvCXiCxZaAWq-lPQ6cNa4uWL3FeIC');
    const d = cardDetails(key, E1, { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2030', cvv: '123' });
    assert.equal(d.fingerprint, '_vBnBA7KH3zki1-sg1ScZ68Gs8abCVUD');
    assert.deepEqual([d.bin, d.last_four_digits], ['424242', '4242']);
    assert.equal(JSON.stringify(d).includes('4242424242424242'), false);
    assert.equal(JSON.stringify(d).includes('"123"'), false);
  });
});
