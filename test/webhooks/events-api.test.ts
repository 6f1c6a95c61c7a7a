// The merchant's events API (issue 18): GET /v2/events and /v2/events/{id} read back the
// events payd wrote, each exactly as its webhook body; and GET
// /v2/payments/{id}/operations/{operation_id} reads back one operation (the spec, Errors
// 4: resource_id "reading it back gives the outcome of the first call").
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { envelope } from '../../src/webhooks/dispatcher.ts';

const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };

describe('events API and operation read-back', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  let seq = 0;
  const paymentIds: string[] = [];
  let captureId = '';

  const post = (who: Merchant, url: string, payload: unknown, key = `ev-${++seq}`) =>
    t.app.inject({ method: 'POST', url, headers: { ...who.auth, 'x-idempotency-key': key }, payload: payload as Record<string, unknown> });
  const get = (who: Merchant, url: string) => t.app.inject({ url, headers: who.auth });
  const list = async (who: Merchant, query: string) => {
    const res = await get(who, `/v2/events${query}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { object: string; data: Array<{ id: string; type: string; created_at: string; entity_id: string; data: any }>; has_more: boolean; next_cursor: string | null };
  };

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Events shop');
    other = await t.createMerchant('Other shop');
    for (let i = 0; i < 5; i++) {
      const res = await post(m, '/v2/payments', { amount: 1000 + i, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 1000 + i, instrument: card }] });
      assert.equal(res.statusCode, 200, res.body);
      paymentIds.push(res.json().id);
    }
    const cap = await post(m, `/v2/payments/${paymentIds[0]}/captures`, { amount: 400, merchant_reference: 'ship-1' }, 'capture-key-1');
    assert.equal(cap.statusCode, 200, cap.body);
    captureId = String(cap.headers['x-created-operation-id']);
    const res = await post(other, '/v2/payments', { amount: 777, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 777, instrument: card }] });
    assert.equal(res.statusCode, 200, res.body);
  });
  after(() => t.close());

  it('lists the entity\'s events newest first, each exactly the webhook body, and only its own', async () => {
    const page = await list(m, '');
    assert.equal(page.object, 'list');
    assert.equal(page.data.length, 6, 'five authorizations and a capture');
    assert.equal(page.has_more, false);
    assert.equal(page.next_cursor, null);
    assert.equal(page.data[0]!.type, 'payment.captured');
    assert.equal(page.data[0]!.data.operation_id, captureId);
    assert.ok(page.data.every((e) => e.entity_id === m.entityId));
    const times = page.data.map((e) => e.created_at);
    assert.deepEqual([...times].sort().reverse(), times);
    // The item is the webhook body, byte for byte once serialized.
    const e = page.data[1]!;
    assert.equal(JSON.stringify(e), envelope({ event_id: e.id, type: e.type, event_created_at: new Date(e.created_at), entity_id: e.entity_id, data: e.data }));
    const one = await get(m, `/v2/events/${e.id}`);
    assert.equal(one.statusCode, 200);
    assert.deepEqual(one.json(), e);
    // Another entity's event is unknown (404, no body), and its list is its own.
    const theirs = await get(other, `/v2/events/${e.id}`);
    assert.equal(theirs.statusCode, 404);
    assert.equal(theirs.body, '');
    assert.equal((await list(other, '')).data.length, 1);
  });

  it('pages forwards and backwards in both orders, every event exactly once', async () => {
    const all = (await list(m, '?limit=100')).data.map((e) => e.id);
    for (const order of ['desc', 'asc']) {
      const expected = order === 'asc' ? [...all].reverse() : all;
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await list(m, `?order=${order}&limit=4${cursor ? `&starting_after=${cursor}` : ''}`);
        seen.push(...page.data.map((e) => e.id));
        cursor = page.next_cursor;
        assert.equal(page.has_more, cursor !== null);
      } while (cursor);
      assert.deepEqual(seen, expected, order);
      // Back from the end with ending_before.
      const back: string[] = [];
      let before: string | undefined = expected[expected.length - 1];
      back.unshift(before!);
      for (;;) {
        const page = await list(m, `?order=${order}&limit=2&ending_before=${before}`);
        back.unshift(...page.data.map((e) => e.id));
        if (!page.has_more) break;
        before = page.data[0]!.id;
      }
      assert.deepEqual(back, expected, `${order} backwards`);
    }
  });

  it('filters by type and creation time', async () => {
    const captured = await list(m, '?type=payment.captured');
    assert.deepEqual(captured.data.map((e) => e.type), ['payment.captured']);
    const several = await list(m, '?type=payment.captured,payment.authorized');
    assert.ok(several.data.length >= 2);
    assert.ok(several.data.every((e) => ['payment.captured', 'payment.authorized'].includes(e.type)));
    assert.ok(several.data.some((e) => e.type === 'payment.authorized') && several.data.some((e) => e.type === 'payment.captured'));
    // The parameter repeated (type=a&type=b) means the same as the comma list.
    const repeated = await list(m, '?type=payment.captured&type=payment.authorized');
    assert.deepEqual(repeated.data.map((e) => e.id), several.data.map((e) => e.id));
    const newest = (await list(m, '')).data[0]!;
    const since = await list(m, `?created_gte=${encodeURIComponent(newest.created_at)}`);
    assert.ok(since.data.some((e) => e.id === newest.id));
    assert.ok(since.data.every((e) => e.created_at >= newest.created_at));
    const upTo = await list(m, `?created_lt=${encodeURIComponent(newest.created_at)}`);
    assert.ok(upTo.data.every((e) => e.created_at < newest.created_at));
  });

  it('refuses bad parameters with 400 naming them', async () => {
    const otherEvent = (await list(other, '')).data[0]!.id;
    for (const [query, name] of [
      ['?limit=0', 'limit'], ['?limit=101', 'limit'], ['?order=up', 'order'], ['?type=payment.exploded', 'type'], ['?type=payment.captured,payment.exploded', 'type'], ['?type=payment.captured,', 'type'], ['?type=payment.captured&type=payment.exploded', 'type'],
      ['?created_gte=yesterday', 'created_gte'], [`?starting_after=${otherEvent}`, 'starting_after'],
      [`?starting_after=${otherEvent}&ending_before=${otherEvent}`, 'ending_before'], ['?colour=red', 'colour'],
    ] as const) {
      const p = expectProblem(await get(m, `/v2/events${query}`), 400);
      assert.ok(p.invalid_params?.some((x) => x.name === name && x.in === 'query'), `${query}: ${JSON.stringify(p.invalid_params)}`);
    }
  });

  it('reads back one operation by the id x-created-operation-id and a 409 resource_id name', async () => {
    const res = await get(m, `/v2/payments/${paymentIds[0]}/operations/${captureId}`);
    assert.equal(res.statusCode, 200, res.body);
    const op = res.json();
    assert.equal(op.kind, 'CAPTURE');
    assert.equal(op.payment_id, paymentIds[0]);
    assert.equal(op.amount, 400);
    assert.equal(op.status, 'SUCCESS');
    assert.equal(op.merchant_reference, 'ship-1');
    const replay = expectProblem(await post(m, `/v2/payments/${paymentIds[0]}/captures`, { amount: 400 }, 'capture-key-1'), 409);
    const again = await t.app.inject({ url: `/v2/payments/${paymentIds[0]}/operations/${replay.resource_id}`, headers: { ...m.auth, 'cache-control': 'max-age=60' } });
    assert.deepEqual(again.json(), op);
    // Another payment's id, an unknown operation, another entity: 404 without a body.
    for (const [who, url] of [
      [m, `/v2/payments/${paymentIds[1]}/operations/${captureId}`],
      [m, `/v2/payments/${paymentIds[0]}/operations/${crypto.randomUUID()}`],
      [other, `/v2/payments/${paymentIds[0]}/operations/${captureId}`],
    ] as const) {
      const r = await get(who, url);
      assert.equal(r.statusCode, 404, url);
      assert.equal(r.body, '');
    }
  });
});
