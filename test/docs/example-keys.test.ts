// A newcomer runs the docs' examples one after the other against one payd and one merchant
// (issue 43's walkthrough: the README's first calls, then docs/sdk.md). An idempotency key
// belongs to one request, so two examples that send the same key with another body make the
// second a 409 (docs/sdk.md's payment once reused the README's `order-1001-payment`).
// code-blocks.test.ts runs each block on a merchant of its own, so it cannot see this.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { docBlocks } from '../helpers/doc-blocks.ts';

/** Every idempotency key the code blocks of README.md and docs/*.md send, with where. */
function exampleKeys(): { key: string; where: string }[] {
  return docBlocks().flatMap((b) => {
    const out: { key: string; where: string }[] = [];
    const key = /idempotencyKey: '([^']+)'|x-idempotency-key: ([^'"\s]+)/gi;
    for (let k = key.exec(b.code); k; k = key.exec(b.code)) {
      // The block's first line is the one after its fence.
      out.push({ key: (k[1] ?? k[2])!, where: `${b.file}:${b.line + b.code.slice(0, k.index).split('\n').length}` });
    }
    return out;
  });
}

describe('the idempotency keys of the docs\' examples', () => {
  it('finds the keys of the README and docs/sdk.md', () => {
    const wheres = exampleKeys().map((k) => k.where.split(':')[0]);
    assert.ok(wheres.includes('README.md') && wheres.includes('docs/sdk.md'), JSON.stringify(exampleKeys()));
  });

  it('never sends one key from two places, so the examples run one after the other on one merchant', () => {
    const seen = new Map<string, string>();
    for (const { key, where } of exampleKeys()) {
      assert.ok(!seen.has(key), `${where} sends the idempotency key ${key} that ${seen.get(key)} already sent: the second is answered 409`);
      seen.set(key, where);
    }
  });
});
