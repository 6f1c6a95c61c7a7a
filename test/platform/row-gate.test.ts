// The per-row gate of the pg adapter (platform/db/row-gate.ts): one fn per key at a time,
// in arrival order; other keys never wait; when the running fn's lock wait gave up
// (55P03), those waiting for the key are refused busy at once. (The end-to-end behaviour
// on PostgreSQL, with payd processes: test/faults/lock-isolation.test.ts.)
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DatabaseBusyError } from '../../src/platform/db/errors.ts';
import { RowGate } from '../../src/platform/db/row-gate.ts';

/** A promise with its resolve and reject at hand. */
function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}
const settled = () => new Promise((r) => setImmediate(r));

describe('RowGate', () => {
  it('runs one fn per key at a time, in arrival order; another key does not wait', async () => {
    const gate = new RowGate(60_000);
    const order: string[] = [];
    const first = deferred();
    const a1 = gate.run('a', async () => { order.push('a1 start'); await first.promise; order.push('a1 end'); });
    const a2 = gate.run('a', async () => { order.push('a2'); });
    const a3 = gate.run('a', async () => { order.push('a3'); });
    const b = gate.run('b', async () => { order.push('b'); });
    await b;
    await settled();
    assert.deepEqual(order, ['a1 start', 'b'], 'a2 and a3 wait for a1; b does not');
    first.resolve();
    await Promise.all([a1, a2, a3]);
    assert.deepEqual(order, ['a1 start', 'b', 'a1 end', 'a2', 'a3']);
    assert.equal(gate.busyKeys, 0, 'nothing left held');
  });

  it('a lock wait that gave up refuses those waiting at once; the next arrival runs', async () => {
    const gate = new RowGate(60_000);
    const first = deferred();
    const a1 = gate.run('a', () => first.promise);
    const waiting = [gate.run('a', async () => 'ran'), gate.run('a', async () => 'ran')];
    await settled();
    first.reject(Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' }));
    await assert.rejects(a1, { code: '55P03' });
    for (const w of waiting) await assert.rejects(w, DatabaseBusyError);
    assert.equal(await gate.run('a', async () => 'after'), 'after');
    assert.equal(gate.busyKeys, 0);
  });

  it('another error of the running fn hands the turn on', async () => {
    const gate = new RowGate(60_000);
    const a1 = gate.run('a', async () => { throw new Error('constraint'); });
    const a2 = gate.run('a', async () => 'next');
    await assert.rejects(a1, /constraint/);
    assert.equal(await a2, 'next');
  });
});
