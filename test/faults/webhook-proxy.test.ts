// Fault suite: a webhook receiver behind the TCP fault proxy. Each fault of the network
// between payd's dispatcher and the receiver (refused, reset in the middle of the answer,
// blackholed past the call timeout, slowed) is met with a recorded failed attempt and a
// retry; once the network heals the event is delivered and recorded DELIVERED exactly
// once, with the same event id every time, and the process never fails.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { enqueueEvent } from '../../src/webhooks/index.ts';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { type Fault, type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { FAST, type Receiver, startReceiver, waitFor } from '../webhooks/helpers.ts';

interface Attempt { status_code: number | null; error: string | null }

describe('fault suite: a webhook receiver behind a faulty network', () => {
  let t: TestApp;
  let m: Merchant;
  let rx: Receiver;
  let proxy: FaultProxy;
  before(async () => {
    // Short call timeout (the blackhole case waits for it) and fast retries.
    t = await createTestApp({ ...FAST, webhookTimeoutMs: 1000, webhookLeaseMs: 5000, webhookBackoffBaseMs: 100, webhookBackoffMaxMs: 300 });
    m = await t.createMerchant();
    rx = await startReceiver();
    proxy = await startFaultProxy({ port: Number(new URL(rx.url).port) });
    t.app.webhooks.dispatcher.start(() => {});
  });
  after(async () => {
    await t.close();
    await proxy.close();
    await rx.close();
  });

  const cases: Array<[string, Fault, RegExp]> = [
    ['refused', 'close', /ECONNREFUSED|refused/i],
    ['reset in the middle of the answer', { resetAfterBytes: 5 }, /reset|socket|terminated|closed|aborted/i],
    ['blackholed past the call timeout', 'blackhole', /timeout/i],
  ];
  for (const [name, fault, reason] of cases) {
    it(`${name}: failed attempts are recorded, then the event is delivered once the network heals`, async () => {
      await proxy.set(fault);
      const before = rx.requests.length;
      const { id } = await t.testDb.db.transaction((tx) =>
        enqueueEvent(tx, { entityId: m.entityId, type: 'payment.captured', data: { fault: name }, url: `${proxy.rewrite(rx.url)}/hook` }));
      const attempts = () => t.testDb.db.query<Attempt>(
        `SELECT a.status_code, a.error FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
          WHERE d.event_id = $1 ORDER BY a.attempt_number`, [id]);
      await waitFor(async () => (await attempts()).rows.length >= 2, 30_000, 'two failed attempts');
      await proxy.set('pass');
      await waitFor(async () => {
        const { rows } = await t.testDb.db.query<{ status: string }>('SELECT status FROM webhook_deliveries WHERE event_id = $1', [id]);
        return rows[0]?.status === 'DELIVERED';
      }, 30_000, 'the delivery once the network healed');
      const { rows } = await attempts();
      const failed = rows.slice(0, -1);
      assert.ok(failed.length >= 2);
      for (const a of failed) {
        assert.notEqual(a.status_code, 200, 'a failed attempt is not recorded as a success');
        assert.match(String(a.error), reason, JSON.stringify(a));
      }
      assert.equal(rows.at(-1)!.status_code, 200);
      assert.deepEqual(rows.filter((a) => a.status_code === 200).length, 1, 'recorded DELIVERED once');
      // The receiver may have seen the event more than once (a reset after it answered):
      // at least once, always under the same event id.
      const got = rx.requests.slice(before);
      assert.ok(got.length >= 1);
      for (const r of got) assert.equal(r.headers['payd-event-id'], id);
    });
  }

  it('slowed: the event is delivered through a slow network', async () => {
    await proxy.set({ delayMs: 100 });
    const { id } = await t.testDb.db.transaction((tx) =>
      enqueueEvent(tx, { entityId: m.entityId, type: 'payment.captured', data: { fault: 'delay' }, url: `${proxy.rewrite(rx.url)}/hook` }));
    await waitFor(async () => {
      const { rows } = await t.testDb.db.query<{ status: string }>('SELECT status FROM webhook_deliveries WHERE event_id = $1', [id]);
      return rows[0]?.status === 'DELIVERED';
    }, 30_000, 'the delivery through the slow network');
    await proxy.set('pass');
  });
});
