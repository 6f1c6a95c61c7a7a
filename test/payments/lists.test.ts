// The merchant's lists (issue 18): GET /v2/payments, /v2/client-sessions and
// /v2/payment-links page through the entity's objects exactly once in either direction,
// filter, refuse bad parameters naming them, and never show another entity's objects;
// each list reads an index that starts with entity_id (EXPLAIN on a large table).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });

describe('list endpoints', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  let seq = 0;
  const made: Array<{ id: string; amount: number; status: string }> = [];

  const post = (who: Merchant, url: string, payload: unknown) =>
    t.app.inject({ method: 'POST', url, headers: { ...who.auth, 'x-idempotency-key': `list-${++seq}` }, payload: payload as Record<string, unknown> });
  const list = async (who: Merchant, url: string) => {
    const res = await t.app.inject({ url, headers: who.auth });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { object: string; data: any[]; has_more: boolean; next_cursor: string | null };
  };
  /** Every id, walking pages of `limit` forwards, then backwards from the last. */
  const walk = async (who: Merchant, path: string, filter: string, limit: number) => {
    const sep = filter ? `&${filter}` : '';
    const forward: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await list(who, `${path}?limit=${limit}${sep}${cursor ? `&starting_after=${cursor}` : ''}`);
      assert.equal(page.object, 'list');
      assert.ok(page.data.length <= limit);
      forward.push(...page.data.map((x) => x.id));
      cursor = page.next_cursor;
    } while (cursor);
    const backward: string[] = forward.slice(-1);
    while (backward.length > 0) {
      const page = await list(who, `${path}?limit=${limit}${sep}&ending_before=${backward[0]}`);
      backward.unshift(...page.data.map((x) => x.id));
      if (!page.has_more) break;
    }
    return { forward, backward };
  };

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Lists shop');
    other = await t.createMerchant('Other lists shop');
    const cards = ['4242424242424242', '4000000000000002', '4242424242424242', '4000000000000119', '4242424242424242'];
    for (let i = 0; i < 15; i++) {
      const amount = 1000 + i * 100;
      const res = await post(m, '/v2/payments', {
        amount, currency: i % 5 === 4 ? 'USD' : 'EUR', order: { reference: `order-${i}` },
        split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(cards[i % 5]) }],
      });
      assert.equal(res.statusCode, 200, res.body);
      made.push({ id: res.json().id, amount, status: res.json().authorization.status });
    }
    // A split payment (gift card + card), captured in part, then refunded in full.
    const split = await post(m, '/v2/payments', {
      amount: 5000, currency: 'EUR', split: [
        { partner: 'gift-sim', method: 'GIFT_CARD', amount: 2000, instrument: { type: 'GIFT_CARD', number: '6036280000004444' } },
        { partner: 'card-sim', method: 'CARD', amount: 3000, instrument: card() },
      ],
    });
    made.push({ id: split.json().id, amount: 5000, status: split.json().authorization.status });
    assert.equal((await post(m, `/v2/payments/${split.json().id}/captures`, { amount: 2500 })).statusCode, 200);
    assert.equal((await post(m, `/v2/payments/${split.json().id}/refunds`, {})).statusCode, 200);
    // The same millisecond for several rows: the id breaks the tie.
    await t.testDb.db.query(`UPDATE payments SET created_at = (SELECT created_at FROM payments WHERE id = $1) WHERE id = ANY($2::uuid[])`,
      [made[3]!.id, made.slice(3, 8).map((x) => x.id)]);
    assert.equal((await post(other, '/v2/payments', { amount: 700, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 700, instrument: card() }] })).statusCode, 200);
    for (let i = 0; i < 4; i++) {
      const s = await post(m, '/v2/client-sessions', { amount: 1200 + i, currency: 'EUR', shopper_redirection_url: 'https://shop.example/back' });
      assert.equal(s.statusCode, 200, s.body);
      if (i === 0) assert.equal((await post(m, `/v2/client-sessions/${s.json().id}/abort`, { status: 'ABORTED_BY_MERCHANT' })).statusCode, 200);
      const l = await post(m, '/v2/payment-links', { amount: 900 + i, currency: 'EUR', shopper_redirection_url: 'https://shop.example/back' });
      assert.equal(l.statusCode, 200, l.body);
      if (i === 1) assert.equal((await post(m, `/v2/payment-links/${l.json().id}/cancel`, {})).statusCode, 200);
    }
  });
  after(() => t.close());

  it('walks every payment exactly once, forwards and backwards, newest first, ties broken by id', async () => {
    for (const limit of [1, 4, 100]) {
      const { forward, backward } = await walk(m, '/v2/payments', '', limit);
      assert.equal(forward.length, made.length, `limit ${limit}`);
      assert.equal(new Set(forward).size, made.length);
      assert.deepEqual(new Set(forward), new Set(made.map((x) => x.id)));
      assert.deepEqual(backward, forward, `limit ${limit}: backwards gives the same order`);
    }
    const page = await list(m, '/v2/payments?limit=100');
    const keys = page.data.map((p) => [p.created_at, p.id] as const);
    for (let i = 1; i < keys.length; i++) {
      const [a, b] = [keys[i - 1]!, keys[i]!];
      assert.ok(a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]), `order at ${i}`);
    }
    // Items are the Payment as GET with max-age shows it.
    const one = page.data.find((p) => p.id === made[0]!.id);
    const got = await t.app.inject({ url: `/v2/payments/${made[0]!.id}`, headers: { ...m.auth, 'cache-control': 'max-age=1' } });
    assert.deepEqual(one, got.json());
  });

  it('filters payments', async () => {
    const ids = async (filter: string) => (await list(m, `/v2/payments?limit=100&${filter}`)).data.map((p) => p.id).sort();
    const expect = (pred: (x: (typeof made)[number], i: number) => boolean) => made.filter(pred).map((x) => x.id).sort();
    assert.deepEqual(await ids('authorization_status=REFUSED'), expect((x) => x.status === 'REFUSED'));
    assert.deepEqual(await ids('authorization_status=REFUSED,ERROR'), expect((x) => x.status === 'REFUSED' || x.status === 'ERROR'));
    assert.deepEqual(await ids('order_reference=order-7'), [made[7]!.id]);
    assert.deepEqual(await ids('currency=USD'), expect((_x, i) => i < 15 && i % 5 === 4));
    assert.deepEqual(await ids('amount_gte=1500&amount_lte=1800'), expect((x) => x.amount >= 1500 && x.amount <= 1800));
    assert.deepEqual(await ids('method=GIFT_CARD'), [made[15]!.id]);
    assert.deepEqual(await ids('partner=gift-sim'), [made[15]!.id]);
    assert.deepEqual(await ids('captured=PARTIALLY'), [made[15]!.id]);
    assert.deepEqual(await ids('refunded=FULLY'), [made[15]!.id]);
    assert.equal((await ids('captured=NOT')).length, made.length - 1);
    const newest = (await list(m, '/v2/payments?limit=1')).data[0];
    assert.deepEqual(await ids(`created_gte=${encodeURIComponent(newest.created_at)}`), [newest.id]);
    assert.ok(!(await ids(`created_lt=${encodeURIComponent(newest.created_at)}`)).includes(newest.id));
    // Filters hold across pages.
    const { forward } = await walk(m, '/v2/payments', 'authorization_status=AUTHORIZED', 2);
    assert.deepEqual([...forward].sort(), expect((x) => x.status === 'AUTHORIZED'));
    // Partner and method each join the key table (migration 0055), together twice, with
    // other filters and an amount range too; pages of a key in both directions, in the
    // listing order (made[3..7] share a created_at set after they were made: ties by id).
    assert.deepEqual(await ids('partner=gift-sim&method=CARD'), [made[15]!.id]);
    assert.deepEqual(await ids('partner=card-sim&method=GIFT_CARD&currency=EUR'), [made[15]!.id]);
    assert.deepEqual(await ids('partner=gift-sim&currency=USD'), []);
    assert.deepEqual(await ids('method=CARD&currency=USD'), expect((_x, i) => i < 15 && i % 5 === 4));
    assert.deepEqual(await ids('partner=card-sim&amount_gte=1500&amount_lte=1800'), expect((x) => x.amount >= 1500 && x.amount <= 1800));
    assert.deepEqual(await ids('partner=gift-sim&amount_gte=1500&amount_lte=1800'), []);
    const byCard = await walk(m, '/v2/payments', 'method=CARD', 2);
    assert.deepEqual(byCard.forward, (await walk(m, '/v2/payments', '', 2)).forward);
    assert.deepEqual(byCard.backward, byCard.forward);
  });

  it("keeps a payment's split keys as its split, creation time and existence change", async () => {
    const db = t.testDb.db;
    const k = await t.createMerchant('Keys shop');
    const ids = async (filter: string) => (await list(k, `/v2/payments?limit=100&${filter}`)).data.map((p) => p.id);
    const keys = async (id: string) => (await db.query<{ key: string; created_at: Date }>(
      'SELECT key, created_at FROM payment_split_keys WHERE payment_id = $1 AND entity_id = $2 ORDER BY key', [id, k.entityId])).rows;
    // Inserted by SQL (the trigger covers every writer); a split that names a partner twice has its key once.
    const { rows: [p] } = await db.query<{ id: string; created_at: Date }>(`INSERT INTO payments (id, entity_id, amount, currency, capture_mode, split, authorization_status)
      VALUES (gen_random_uuid(), $1, 3000, 'EUR', 'MANUAL', '[{"partner":"gift-sim","method":"GIFT_CARD","amount":1000},{"partner":"gift-sim","method":"GIFT_CARD","amount":2000}]', 'AUTHORIZED')
      RETURNING id, created_at`, [k.entityId]);
    assert.deepEqual(await keys(p!.id), [{ key: 'method:GIFT_CARD', created_at: p!.created_at }, { key: 'partner:gift-sim', created_at: p!.created_at }]);
    assert.deepEqual(await ids('partner=gift-sim&method=GIFT_CARD'), [p!.id]);
    // payd never changes a payment's split or created_at; were they changed, the keys follow.
    const { rows: [q] } = await db.query<{ created_at: Date }>(`UPDATE payments SET split = '[{"partner":"card-sim","method":"CARD","amount":3000}]',
      created_at = created_at - interval '1 day' WHERE id = $1 RETURNING created_at`, [p!.id]);
    assert.deepEqual(await keys(p!.id), [{ key: 'method:CARD', created_at: q!.created_at }, { key: 'partner:card-sim', created_at: q!.created_at }]);
    assert.deepEqual(await ids('partner=card-sim'), [p!.id]);
    assert.deepEqual(await ids('partner=gift-sim'), []);
    // A payment deleted (by the schema owner: the runtime role may not) leaves no key behind.
    await db.query('DELETE FROM payments WHERE id = $1', [p!.id]);
    assert.deepEqual(await keys(p!.id), []);
  });

  it('lists client sessions and payment links with their status filters', async () => {
    const sessions = await list(m, '/v2/client-sessions?limit=100');
    assert.equal(sessions.data.length, 4);
    assert.deepEqual((await list(m, '/v2/client-sessions?status=ABORTED_BY_MERCHANT')).data.map((s) => s.status), ['ABORTED_BY_MERCHANT']);
    assert.equal((await list(m, '/v2/client-sessions?status=CREATED')).data.length, 3);
    const session = sessions.data[0];
    assert.deepEqual(session, (await t.app.inject({ url: `/v2/client-sessions/${session.id}`, headers: m.auth })).json());
    const { forward, backward } = await walk(m, '/v2/client-sessions', '', 3);
    assert.equal(forward.length, 4);
    assert.deepEqual(backward, forward);

    const links = await list(m, '/v2/payment-links?limit=100');
    assert.equal(links.data.length, 4);
    assert.deepEqual((await list(m, '/v2/payment-links?status=CANCELLED')).data.map((l) => l.status), ['CANCELLED']);
    assert.equal((await list(m, '/v2/payment-links?status=CREATED,PAID')).data.length, 3);
    // An expired link is EXPIRED, not CREATED.
    await t.testDb.db.query(`UPDATE payment_links SET expires_at = now() - interval '1 minute' WHERE id = $1`, [links.data[0].id]);
    assert.deepEqual((await list(m, '/v2/payment-links?status=EXPIRED')).data.map((l) => l.id), [links.data[0].id]);
    assert.equal((await list(m, '/v2/payment-links?status=CREATED')).data.length, 2);
  });

  it("never shows another entity's objects, nor pages from their ids", async () => {
    const theirs = await list(other, '/v2/payments');
    assert.equal(theirs.data.length, 1);
    assert.equal((await list(other, '/v2/client-sessions')).data.length, 0);
    assert.equal((await list(other, '/v2/payment-links')).data.length, 0);
    const p = expectProblem(await t.app.inject({ url: `/v2/payments?starting_after=${theirs.data[0].id}`, headers: m.auth }), 400);
    assert.deepEqual(p.invalid_params, [{ name: 'starting_after', in: 'query', reason: 'is not an id of this list for this entity' }]);
    const mine = (await list(m, '/v2/payments?limit=1')).data[0].id;
    expectProblem(await t.app.inject({ url: `/v2/payments?ending_before=${mine}`, headers: other.auth }), 400);
    // Without credentials: 401.
    expectProblem(await t.app.inject({ url: '/v2/payments' }), 401);
  });

  it('refuses bad parameters with 400 naming them', async () => {
    const id = made[0]!.id;
    for (const [url, name] of [
      ['/v2/payments?limit=0', 'limit'], ['/v2/payments?limit=101', 'limit'], ['/v2/payments?limit=ten', 'limit'],
      ['/v2/payments?authorization_status=PAID', 'authorization_status'], ['/v2/payments?captured=HALF', 'captured'],
      ['/v2/payments?currency=AUD', 'currency'], ['/v2/payments?amount_gte=-1', 'amount_gte'], ['/v2/payments?created_gte=today', 'created_gte'],
      ['/v2/payments?created_gte=2026-01-02T00:00:00Z&created_lt=2026-01-01T00:00:00Z', 'created_lt'],
      [`/v2/payments?starting_after=${id}&ending_before=${id}`, 'ending_before'], ['/v2/payments?starting_after=nope', 'starting_after'],
      ['/v2/payments?colour=red', 'colour'], ['/v2/client-sessions?status=PAID', 'status'], ['/v2/payment-links?status=SUBMITTED', 'status'],
      [`/v2/client-sessions?starting_after=${id}`, 'starting_after'],
    ] as const) {
      const p = expectProblem(await t.app.inject({ url, headers: m.auth }), 400);
      assert.ok(p.invalid_params?.some((x) => x.name === name && x.in === 'query'), `${url}: ${JSON.stringify(p.invalid_params)}`);
    }
  });

  it('reads an index that starts with entity_id for each list and filter, on a large table', async () => {
    const db = t.testDb.db;
    // 20 000 payments of another entity plus the merchant's: a scan of the table would show.
    await db.query(`INSERT INTO payments (id, entity_id, amount, currency, capture_mode, allow_future_usage, split, authorization_status, created_at)
      SELECT gen_random_uuid(), $1, 1000 + g, 'EUR', 'MANUAL', false, '[{"partner":"card-sim","method":"CARD","amount":1000}]'::jsonb, 'AUTHORIZED', now() - g * interval '1 second'
        FROM generate_series(1, 20000) g`, [other.entityId]);
    await db.query('ANALYZE payments');
    await db.query('ANALYZE client_sessions');
    await db.query('ANALYZE payment_links');
    const plan = async (sql: string, params: unknown[]) =>
      (await db.query<Record<string, string>>(`EXPLAIN ${sql}`, params)).rows.map((r) => Object.values(r)[0]).join('\n');
    const page = `ORDER BY created_at DESC, id DESC LIMIT 21`;
    for (const [where, params, index] of [
      ['entity_id = $1', [m.entityId], 'payments_entity_created_idx'],
      ["entity_id = $1 AND authorization_status = ANY($2::text[])", [other.entityId, ['REFUSED']], 'payments_entity_status_created_idx'],
      ['entity_id = $1 AND created_at >= $2', [other.entityId, new Date()], 'payments_entity_created_idx'],
      ['entity_id = $1 AND amount >= $2', [other.entityId, 5000], 'payments_entity_created_idx'],
      ['entity_id = $1 AND order_reference = $2', [other.entityId, 'order-7'], 'payments_entity_order_reference_idx'],
    ] as const) {
      const p = await plan(`SELECT id FROM payments WHERE ${where} ${page}`, [...params]);
      assert.match(p, new RegExp(`Index (Only )?Scan.* using ${index}|Bitmap Index Scan on ${index}`), `${where}:\n${p}`);
      assert.doesNotMatch(p, /Seq Scan on payments/, `${where}:\n${p}`);
    }
    for (const [table, index] of [['client_sessions', 'client_sessions_entity_created_idx'], ['payment_links', 'payment_links_entity_created_idx']] as const) {
      await db.query('SET enable_seqscan = off'); // small tables: ask whether the index serves the order at all
      const p = await plan(`SELECT id FROM ${table} WHERE entity_id = $1 ${page}`, [m.entityId]);
      await db.query('SET enable_seqscan = on');
      assert.match(p, new RegExp(`Index (Only )?Scan.* using ${index}`), p);
      assert.doesNotMatch(p, /Sort/, `no sort: the index gives the order\n${p}`);
    }
  });
});
