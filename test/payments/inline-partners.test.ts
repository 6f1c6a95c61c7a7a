// Partners answering inline (the simulated card acquirer and BNPL provider by default):
// the payment or the operation is written whole in one statement, with its event; the
// regular path still runs for the cards whose behaviour needs a partner-side record,
// and a version conflict leaves nothing written.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { paymentsRepo } from '../../src/payments/payments.repo.ts';
import { moneyWriter } from '../../src/payments/money.repo.ts';
import { paymentEventData } from '../../src/payments/payment-events.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const body = (amount: number, number?: string) => ({ amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) }] });

describe('partners answering inline', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Inline');
    // An endpoint, so that events get their first delivery too.
    const res = await t.app.inject({ method: 'PUT', url: `/admin/v1/entities/${m.entityId}/webhook-endpoint`, headers: t.adminHeaders, payload: { url: 'https://merchant.example/hooks' } });
    assert.ok(res.statusCode < 300, res.body);
  });
  after(() => t.close());

  const create = (payload: object, key?: string) =>
    t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...m.auth, ...(key ? { 'x-idempotency-key': key } : {}) }, payload });
  const op = (id: string, kind: string, payload: object) => t.app.inject({ method: 'POST', url: `/v2/payments/${id}/${kind}`, headers: m.auth, payload });
  const stored = async (id: string) => (await t.app.inject({ url: `/v2/payments/${id}`, headers: { ...m.auth, 'cache-control': 'max-age=0' } })).json();
  const simRows = async (like: string) => Number((await t.testDb.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM sim_partner_operations WHERE key LIKE $1', [like])).rows[0]!.n);
  const events = async (type: string) => (await t.testDb.db.query<{ data: Record<string, any>; deliveries: number }>(
    `SELECT e.data, (SELECT count(*)::int FROM webhook_deliveries d WHERE d.event_id = e.id) AS deliveries
       FROM webhook_events e WHERE e.entity_id = $1 AND e.type = $2 ORDER BY e.created_at`, [m.entityId, type])).rows;

  it('authorizes in one statement: version 1, no partner record, the event carries the payment as answered', async () => {
    const res = await create(body(2500));
    assert.equal(res.statusCode, 200, res.body);
    const p = res.json();
    assert.equal(p.authorization.status, 'AUTHORIZED');
    assert.equal(p.version, 1);
    assert.match(p.authorization.partner_transactions[0].partner_reference, /^ia:[0-9a-f-]{36}:2500:EUR:$/);
    assert.equal(await simRows(`${p.id}:%`), 0, 'the acquirer answered inline');
    assert.deepEqual(await stored(p.id), p, 'what was answered is what was stored');
    const e = (await events('payment.authorized')).find((x) => x.data.id === p.id);
    assert.ok(e, 'payment.authorized written with the payment');
    assert.deepEqual(e.data, paymentEventData(p), 'the event: the answer\'s summary and authorization');
    assert.equal(e.deliveries, 1);
  });

  it('a declined card: REFUSED in one statement, payment.refused', async () => {
    const p = (await create(body(1000, '4000000000000002'))).json();
    assert.equal(p.authorization.status, 'REFUSED');
    assert.equal(p.authorization.partner_transactions[0].status_code, 'DO_NOT_HONOR');
    assert.deepEqual(await stored(p.id), p);
    assert.ok((await events('payment.refused')).some((x) => x.data.id === p.id));
  });

  it('a replayed creation key gets the 409 naming the first payment; nothing else is written', async () => {
    const key = `inline-${randomUUID()}`;
    const first = (await create(body(1200), key)).json();
    const count = async () => (await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments')).rows[0]!.n;
    const before = await count();
    const replays = await Promise.all([create(body(1200), key), create(body(999), key)]);
    for (const r of replays) {
      assert.equal(r.statusCode, 409, r.body);
      assert.equal(r.json().resource_id, first.id);
    }
    assert.equal(await count(), before);
  });

  it('captures, refunds and voids inline: one version each, events with operation_id, amounts exact', async () => {
    const p = (await create(body(10_000))).json();
    const c = await op(p.id, 'captures', { amount: 4000 });
    assert.equal(c.statusCode, 200, c.body);
    const opId = c.headers['x-created-operation-id'] as string;
    const after = c.json();
    assert.equal(after.version, 2);
    assert.equal(after.captures[0].id, opId);
    assert.equal(after.captures[0].status, 'SUCCESS');
    assert.equal(after.amounts.total_captured, 4000);
    assert.deepEqual(await stored(p.id), after);
    const e = (await events('payment.captured')).find((x) => x.data.operation_id === opId);
    assert.ok(e);
    assert.deepEqual(e.data, paymentEventData(after, opId), 'the event: the answer\'s summary and this capture');
    const r = (await op(p.id, 'refunds', { amount: 1000 })).json();
    const v = (await op(p.id, 'voids', {})).json();
    assert.equal(v.version, 4);
    assert.deepEqual([v.amounts.total_captured, v.amounts.total_refunded, v.amounts.total_voided, v.amounts.available_to_capture], [4000, 1000, 6000, 0]);
    assert.equal(r.refunds[0].status, 'SUCCESS');
    assert.equal(await simRows(`${opId}:%`), 0);
  });

  it('a card whose captures are declined: FAILURE decided inline from the reference', async () => {
    const p = (await create(body(3000, '4000000000000341'))).json();
    assert.match(p.authorization.partner_transactions[0].partner_reference, /:fail_capture$/);
    const c = (await op(p.id, 'captures', { amount: 3000 })).json();
    assert.equal(c.captures[0].status, 'FAILURE');
    assert.equal(c.amounts.available_to_capture, 3000);
    assert.ok((await events('payment.capture_failed')).some((x) => x.data.id === p.id));
  });

  it('a card whose captures time out takes the regular path: the acquirer records it, the capture stays PENDING', async () => {
    const p = (await create(body(3000, '4000000000000416'))).json();
    const res = await op(p.id, 'captures', { amount: 3000 });
    const opId = res.headers['x-created-operation-id'] as string;
    assert.equal(res.json().captures[0].status, 'PENDING');
    assert.equal(await simRows(`${opId}:%`), 1, 'recorded at the acquirer, to be synced');
  });

  it('the 3-D Secure card takes the regular path (the acquirer keeps the challenge)', async () => {
    const p = (await create(body(3000, '4000000000003220'))).json();
    assert.equal(p.authorization.status, 'PENDING');
    assert.ok(p.authorization.redirection);
    assert.equal(await simRows(`${p.id}:%`), 1);
  });

  it('an operation written against a version that moved writes nothing', async () => {
    const p = (await create(body(5000))).json();
    const now = new Date();
    const opId = randomUUID();
    const op = {
      id: opId, payment_id: p.id, kind: 'CAPTURE' as const, amount: 5000, status: 'SUCCESS' as const, triggered_by: 'MERCHANT' as const,
      merchant_reference: null, reason: null, idempotency_key: null, created_at: now, updated_at: now,
    };
    const tx = {
      id: randomUUID(), payment_id: p.id, operation_id: opId, parent_id: p.authorization.partner_transactions[0].id, kind: 'CAPTURE' as const,
      seq: 2, partner: 'card-sim', method: 'CARD', amount: 5000, status: 'SUCCESS' as const, partner_key: `${opId}:1`, partner_reference: null,
      partner_status: null, partner_status_description: null, status_code: null, card: null, redirection: null, save_token: null,
      token_saved: null, created_at: now, updated_at: now,
    };
    const row = (await paymentsRepo.getWithLedger(t.testDb.db, m.entityId, p.id))!.payment;
    const moved = { ...row, version: row.version + 1 }; // as if read after another change
    const written = await moneyWriter.reserve(t.testDb.db, { shape: 'operation, concluded', payment: moved, at: now, op, txs: [tx], parents: p.authorization.partner_transactions, event: { entityId: m.entityId, type: 'payment.captured', data: {} } });
    assert.equal(written, undefined);
    const after = await stored(p.id);
    assert.deepEqual(after, p, 'the payment is unchanged');
    const n = (await t.testDb.db.query<{ n: number }>('SELECT (SELECT count(*) FROM payment_operations WHERE id = $1) + (SELECT count(*) FROM partner_transactions WHERE operation_id = $1) AS n', [opId])).rows[0]!.n;
    assert.equal(Number(n), 0);
  });
});
