// GET /v2/payments/{id} with Cache-Control: max-age serves the stored view of the
// payment: built from the ledger on the first read of a version of a payment at rest,
// kept, and served as is while the version (and the view format) stay the same.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { VIEW_FORMAT, paymentView } from '../../src/payments/payment-view.ts';
import type { OperationRow, PartnerTxRow, PaymentBase } from '../../src/payments/payments.repo.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const body = (amount: number, number?: string) => ({ amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) }] });

describe('stored payment view (GET with max-age)', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Stored view');
    other = await t.createMerchant('Someone else');
  });
  after(() => t.close());

  const create = async (amount: number, number?: string) => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: body(amount, number) });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const get = (id: string, maxAge = true, who = m) =>
    t.app.inject({ url: `/v2/payments/${id}`, headers: { ...who.auth, ...(maxAge ? { 'cache-control': 'max-age=30' } : {}) } });
  const storedRow = async (id: string) => (await t.testDb.db.query<{ version: number; view_version: number | null; view_format: string | null; view: string | null }>(
    'SELECT version, view_version, view_format, view FROM payments WHERE id = $1', [id])).rows[0]!;

  it('keeps the view on the first read and serves the same JSON after; it is the payment as the live GET shows it', async () => {
    const p = await create(4000);
    assert.equal((await storedRow(p.id)).view, null, 'nothing stored before a read');
    const first = await get(p.id);
    assert.equal(first.statusCode, 200, first.body);
    assert.match(String(first.headers['content-type']), /^application\/json/);
    const row = await storedRow(p.id);
    assert.equal(row.view_version, row.version);
    assert.ok(row.view_format?.startsWith(`${VIEW_FORMAT}|`));
    assert.equal(row.view, first.body);
    const second = await get(p.id);
    assert.equal(second.body, first.body);
    assert.deepEqual(second.json(), (await get(p.id, false)).json());
    assert.deepEqual(second.json(), p, 'the payment as its creation answered it');
  });

  it('a new version is never answered from the older stored view', async () => {
    const p = await create(5000);
    await get(p.id);
    const cap = await t.app.inject({ method: 'POST', url: `/v2/payments/${p.id}/captures`, headers: m.auth, payload: { amount: 1200 } });
    assert.equal(cap.statusCode, 200, cap.body);
    const after1 = (await get(p.id)).json();
    assert.deepEqual(after1, cap.json());
    assert.equal(after1.amounts.total_captured, 1200);
    assert.equal(after1.version, p.version + 1);
    assert.equal((await storedRow(p.id)).view_version, after1.version);
    // A stored view of another format (another release, another base URL) is rebuilt.
    await t.testDb.db.query(`UPDATE payments SET view = '{"stale":true}', view_format = 'payment-view/0|x' WHERE id = $1`, [p.id]);
    assert.deepEqual((await get(p.id)).json(), after1);
    // And so is one of another version.
    await t.testDb.db.query(`UPDATE payments SET view = '{"stale":true}', view_format = $2, view_version = version - 1 WHERE id = $1`, [p.id, (await storedRow(p.id)).view_format]);
    assert.deepEqual((await get(p.id)).json(), after1);
  });

  it('stores nothing for a payment in flight (3-D Secure challenge pending)', async () => {
    const p = await create(2000, '4000000000003220');
    assert.equal(p.authorization.status, 'PENDING');
    const res = await get(p.id);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().authorization.status, 'PENDING');
    assert.equal((await storedRow(p.id)).view, null);
  });

  it("another entity's payment is a 404 without a body, stored view or not", async () => {
    const p = await create(1500);
    await get(p.id);
    assert.notEqual((await storedRow(p.id)).view, null);
    const res = await get(p.id, true, other);
    assert.equal(res.statusCode, 404);
    assert.equal(res.body, '');
  });

  it('a list page builds the views its payments lack with one read and keeps them with one write, one statement at a time', async () => {
    // Seen in bench:soak (200 flows/s of create, capture, then a read, a refund or the list's
    // first page): the newest payments never have a stored view yet, and the page built each
    // one with three statements of its own (view, ledger, keep), all ten at once: 31
    // statements a page, the pool taken whole (43-46 requests waiting for a connection on
    // average, p99 383-513 ms).
    const lister = await t.createMerchant('Lists');
    const made: Array<{ id: string }> = [];
    for (let i = 0; i < 8; i++) {
      const res = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: lister.auth, payload: body(1000 + i) });
      assert.equal(res.statusCode, 200, res.body);
      made.push(res.json());
    }
    const inFlight = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: lister.auth, payload: body(900, '4000000000003220') });
    assert.equal(inFlight.json().authorization.status, 'PENDING');
    const cap = await t.app.inject({ method: 'POST', url: `/v2/payments/${made[0]!.id}/captures`, headers: lister.auth, payload: { amount: 1000 } });
    assert.equal(cap.statusCode, 200, cap.body);
    await get(made[1]!.id, true, lister); // one already has its view

    const db = t.testDb.db;
    const query = db.query;
    const seen: string[] = [];
    let running = 0;
    let most = 0;
    db.query = (async (sql: string, params?: readonly unknown[]) => {
      const ours = /\bpayments\b/.test(sql);
      if (ours) {
        seen.push(sql);
        most = Math.max(most, ++running);
      }
      try {
        return await query.call(db, sql, params);
      } finally {
        if (ours) running--;
      }
    }) as typeof db.query;
    const list = async () => {
      seen.length = 0;
      const res = await t.app.inject({ url: '/v2/payments?limit=10', headers: lister.auth });
      assert.equal(res.statusCode, 200, res.body);
      return { items: res.json().data as Array<{ id: string; version: number }>, statements: [...seen] };
    };
    let first: Awaited<ReturnType<typeof list>>;
    let second: Awaited<ReturnType<typeof list>>;
    try {
      first = await list();
      second = await list();
    } finally {
      db.query = query;
    }
    assert.deepEqual(new Set(first.items.map((p) => p.id)), new Set([...made.map((p) => p.id), inFlight.json().id]));
    assert.ok(first.statements.length <= 3, `${first.statements.length} statements for a page of ${first.items.length}:\n${first.statements.join('\n')}`);
    assert.equal(most, 1, 'the page\'s statements run one after another, on one connection at a time');
    // Each item is the payment as its read answers it (the live read for those at rest: the
    // one in flight's live read would ask its partner); the views are kept, but the one in flight's.
    for (const item of first.items) {
      assert.deepEqual(item, (await get(item.id, item.id === inFlight.json().id, lister)).json());
      const row = await storedRow(item.id);
      if (item.id === inFlight.json().id) assert.equal(row.view, null);
      else {
        assert.equal(row.view_version, item.version);
        assert.deepEqual(JSON.parse(row.view!), item);
      }
    }
    // The next page read needs only the page's own statement but for the payment in flight.
    assert.deepEqual(second.items, first.items);
    assert.ok(second.statements.length <= 2, second.statements.join('\n'));
  });

  it('VIEW_FORMAT changes whenever the view of a sample payment or the Payment schema does', () => {
    // When this fails: the Payment view changed. Stored views of the old shape must not be
    // served, so change VIEW_FORMAT (src/payments/payment-view.ts), then record both here.
    const at = new Date('2026-01-02T03:04:05.000Z');
    const p: PaymentBase = {
      id: '00000000-0000-4000-8000-000000000001', entity_id: '00000000-0000-4000-8000-000000000002', version: 3, amount: 1000, currency: 'EUR',
      capture_mode: 'MANUAL', allow_future_usage: false, client_session_id: null, order_reference: 'o-1', order: { reference: 'o-1' },
      customer: { email: 'a@example.com' }, browser: null, split: [{ partner: 'card-sim', method: 'CARD', amount: 1000 }],
      authorization_status: 'AUTHORIZED', processing: false, idempotency_key: null, created_at: at, updated_at: at,
    };
    const tx = (over: Partial<PartnerTxRow>): PartnerTxRow => (<PartnerTxRow>{
      id: '00000000-0000-4000-8000-000000000010', payment_id: p.id, operation_id: null, parent_id: null, kind: 'AUTHORIZATION', seq: 1,
      partner: 'card-sim', method: 'CARD', amount: 1000, status: 'AUTHORIZED', partner_key: 'k', partner_reference: 'r', partner_status: 'AUTHORIZED',
      partner_status_description: 'Approved', status_code: 'SUCCEEDED', card: { bin: '424242', last_four: '4242' }, redirection: null, save_token: null,
      token_saved: null, created_at: at, updated_at: at, ...over,
    });
    const op: OperationRow = {
      id: '00000000-0000-4000-8000-000000000020', payment_id: p.id, kind: 'CAPTURE', amount: 400, status: 'SUCCESS', triggered_by: 'MERCHANT',
      merchant_reference: 'c-1', reason: null, idempotency_key: null, created_at: at, updated_at: at,
    };
    const txs = [tx({}), tx({ id: '00000000-0000-4000-8000-000000000011', operation_id: op.id, parent_id: '00000000-0000-4000-8000-000000000010', kind: 'CAPTURE', seq: 2, amount: 400, status: 'SUCCESS' })];
    const schema = t.app.getSchema('Payment');
    assert.ok(schema, 'the Payment schema is registered');
    const hash = createHash('sha256').update(JSON.stringify([paymentView(p, txs, [op], 'https://payd.example'), schema])).digest('hex').slice(0, 16);
    assert.deepEqual({ VIEW_FORMAT, hash }, { VIEW_FORMAT: 'payment-view/6', hash: '58971ff0ec4b3ad2' });
  });
});
