// Graceful stop of the webhook dispatcher: a delivery already sent when the app closes is
// waited for and recorded (no duplicate after every deploy); one that outlasts the drain
// budget is cut and recorded as interrupted (due again at once); nothing new is claimed
// once the stop began. Every test holds the receiver's answer open and decides when it
// comes, so no outcome depends on how busy the machine is.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp } from '../helpers/app.ts';
import { enqueueEvent } from '../../src/webhooks/index.ts';
import { FAST, startReceiver, waitFor } from './helpers.ts';

interface Row { status: string; attempt_count: number; claim_token: string | null }

/** An app whose receiver holds every answer until `release()`. */
async function scenario(shutdownGraceMs: number) {
  const t = await createTestApp({ ...FAST, shutdownGraceMs });
  let release: () => void = () => {};
  const held = new Promise<void>((r) => { release = r; });
  const rx = await startReceiver(() => ({ status: 200, body: 'ok', hold: held }));
  const m = await t.createMerchant();
  const enqueue = (data: Record<string, unknown>) =>
    t.testDb.db.transaction((tx) => enqueueEvent(tx, { entityId: m.entityId, type: 'payment.captured', data, url: `${rx.url}/hook` }));
  const row = async (eventId: string) =>
    (await t.testDb.db.query<Row>('SELECT status, attempt_count, claim_token FROM webhook_deliveries WHERE event_id = $1', [eventId])).rows[0]!;
  const dispatcher = t.app.webhooks.dispatcher;
  const cleanup = async () => {
    release();
    await t.testDb.close();
    await rx.close();
  };
  return { t, rx, dispatcher, release: () => release(), enqueue, row, cleanup };
}

describe('webhook dispatcher: graceful stop', () => {
  it('waits for a delivery in flight and records it as DELIVERED', async () => {
    const s = await scenario(10_000);
    try {
      const { id } = await s.enqueue({ n: 1 });
      s.dispatcher.start((err) => console.error(err));
      await waitFor(() => s.rx.requests.length === 1, 15_000, 'the delivery to reach the receiver');
      const closing = s.t.app.close();
      await waitFor(() => s.dispatcher.stopping, 5_000, 'the dispatcher to begin stopping');
      // The stop has begun; only now does the receiver answer.
      s.release();
      await closing;
      assert.deepEqual(await s.row(id), { status: 'DELIVERED', attempt_count: 1, claim_token: null });
    } finally {
      await s.cleanup();
    }
  });

  it('cuts a call that outlasts the drain budget and records it as interrupted, due again', async () => {
    // A grace of 0: nothing may be waited for, the call is cut at once.
    const s = await scenario(0);
    try {
      const { id } = await s.enqueue({ n: 2 });
      s.dispatcher.start((err) => console.error(err));
      await waitFor(() => s.rx.requests.length === 1, 15_000, 'the delivery to reach the receiver');
      await s.t.app.close();
      const r = await s.row(id);
      assert.equal(r.status, 'PENDING');
      assert.equal(r.claim_token, null, 'the claim is given back');
      const { rows } = await s.t.testDb.db.query<{ error: string; due: boolean }>(
        `SELECT a.error, d.next_attempt_at <= now() AS due FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
          WHERE d.event_id = $1`, [id]);
      assert.equal(rows.length, 1);
      assert.match(rows[0]!.error, /interrupted/);
      assert.equal(rows[0]!.due, true, 'due again at once');
    } finally {
      await s.cleanup();
    }
  });

  it('claims nothing new once the stop began', async () => {
    const s = await scenario(10_000);
    try {
      const first = await s.enqueue({ n: 3 });
      s.dispatcher.start((err) => console.error(err));
      await waitFor(() => s.rx.requests.length === 1, 15_000, 'the first delivery to reach the receiver');
      const closing = s.t.app.close();
      await waitFor(() => s.dispatcher.stopping, 5_000, 'the dispatcher to begin stopping');
      const second = await s.enqueue({ n: 4 });
      // The stop's last round is over (the dispatcher can claim nothing more from then on)
      // while the first call is still held: only then is the second event's fate settled.
      await waitFor(() => !s.dispatcher.claiming, 5_000, 'the dispatcher to end its last round');
      s.release();
      await closing;
      assert.equal(s.rx.requests.length, 1, 'the second event was not sent');
      assert.equal((await s.row(first.id)).status, 'DELIVERED');
      assert.deepEqual(await s.row(second.id), { status: 'PENDING', attempt_count: 0, claim_token: null });
    } finally {
      await s.cleanup();
    }
  });
});
