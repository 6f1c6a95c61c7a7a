// One idempotency mechanism on every keyed creating request (issue 44; docs/decisions.md
// "Idempotency"): any reuse of a key is 409 write-conflict with resource_id, and
// same_request tells a retry of the first request from another request reusing the key,
// whatever check that other request fails (validation, not JSON, another media type);
// keys are honoured on client sessions, payment links and the webhook secret rotation;
// scoped per entity; concurrent replays answered once; a refused first request gives its
// key back; the stored fingerprint is a keyed hash, never the body.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const PAN = '4242424242424242';
const card = () => ({ type: 'CARD', number: PAN, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const paymentBody = (amount: number) => ({ amount, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card() }] });
const sessionBody = (amount: number) => ({ amount, currency: 'EUR' });
const linkBody = (amount: number) => ({ amount, currency: 'EUR' });

/** The spec's body exactly, plus same_request; returns the problem. */
function expectConflict(res: LightMyRequestResponse, instance: string, resourceId: string, sameRequest: boolean): Record<string, unknown> {
  const p = expectProblem(res, 409);
  assert.deepEqual(
    { type: p.type, title: p.title, status: p.status, instance: p.instance, resource_id: p.resource_id, same_request: p.same_request },
    { type: 'urn:eu.service:write-conflict', title: 'Idempotency violation', status: 409, instance, resource_id: resourceId, same_request: sameRequest },
    res.body,
  );
  return p;
}

describe('idempotency keys on every creating request', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  before(async () => {
    // Rate limits and the request log off: their timers (once a second) would add statements to the counts below.
    t = await createTestApp({ rateLimitTokenPerKey: 0, rateLimitTokenPerAddress: 0, rateLimitApiPerKey: 0, requestLogPerSecond: 0 });
    m = await t.createMerchant('Keys everywhere');
    other = await t.createMerchant('Other keys');
  });
  after(() => t.close());

  const post = (url: string, key: string | undefined, payload: unknown, who: Merchant = m, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: 'POST', url,
      headers: { ...who.auth, ...(key ? { 'x-idempotency-key': key } : {}), ...headers },
      ...(payload === undefined ? {} : { payload: payload as string }),
    });
  const count = async (sql: string, params: unknown[]) => (await t.testDb.db.query<{ n: number }>(sql, params)).rows[0]!.n;

  /** Every way a second request with the key can differ from the first: all 409 same_request false, nothing created. */
  async function otherRequestsConflict(url: string, key: string, first: string, differentBody: object) {
    expectConflict(await post(url, key, differentBody), url, first, false);
    expectConflict(await post(url, key, { amount: 'ten' }), url, first, false); // fails validation
    expectConflict(await post(url, key, { amount: 1000, currency: 'EUR', nonsense: true }), url, first, false); // unknown field
    expectConflict(await post(url, key, '{"amount": 10', m, { 'content-type': 'application/json' }), url, first, false); // not JSON
    expectConflict(await post(url, key, 'amount=10', m, { 'content-type': 'text/plain' }), url, first, false); // another media type
    expectConflict(await post(url, key, '[]', m, { 'content-type': 'application/json' }), url, first, false); // JSON, not an object
  }

  it('POST /v2/payments: a retry is 409 same_request true; any other request with the key 409 same_request false; nothing created twice', async () => {
    const first = await post('/v2/payments', 'pay-1', paymentBody(1000));
    assert.equal(first.statusCode, 200, first.body);
    const id = first.json().id as string;
    expectConflict(await post('/v2/payments', 'pay-1', paymentBody(1000)), '/v2/payments', id, true);
    await otherRequestsConflict('/v2/payments', 'pay-1', id, paymentBody(2000));
    // Bodies that pass the schema and fail payd's own checks (issue 44 item 6): the key still decides first.
    const split = { ...paymentBody(1000), split: [{ ...paymentBody(1000).split[0]!, amount: 900 }] }; // parts not adding up
    const badCard = { ...paymentBody(1000), split: [{ ...paymentBody(1000).split[0]!, instrument: { ...card(), number: '4242424242424241' } }] }; // Luhn
    const unknownPartner = { ...paymentBody(1000), split: [{ ...paymentBody(1000).split[0]!, partner: 'nobody-sim' }] };
    const refusedCurrency = { ...paymentBody(1000), currency: 'XTS' };
    for (const body of [split, badCard, unknownPartner, refusedCurrency]) {
      expectProblem(await post('/v2/payments', `fresh-${Math.random()}`, body), 400); // refused on its own
      expectConflict(await post('/v2/payments', 'pay-1', body), '/v2/payments', id, false);
    }
    assert.equal(await count('SELECT count(*)::int AS n FROM payments WHERE entity_id = $1 AND idempotency_key = $2', [m.entityId, 'pay-1']), 1);
    // Another merchant's same key is its own.
    const theirs = await post('/v2/payments', 'pay-1', paymentBody(1000), other);
    assert.equal(theirs.statusCode, 200, theirs.body);
    assert.notEqual(theirs.json().id, id);
  });

  it('captures, refunds and voids: the key is the payment\'s; another operation or body is same_request false', async () => {
    const p = (await post('/v2/payments', undefined, paymentBody(5000))).json();
    const url = `/v2/payments/${p.id}/captures`;
    const cap = await post(url, 'op-1', { amount: 1000 });
    assert.equal(cap.statusCode, 200, cap.body);
    const opId = cap.headers['x-created-operation-id'] as string;
    expectConflict(await post(url, 'op-1', { amount: 1000 }), url, opId, true);
    expectConflict(await post(url, 'op-1', { amount: 2000 }), url, opId, false);
    expectConflict(await post(url, 'op-1', { amount: -1 }), url, opId, false);
    expectConflict(await post(url, 'op-1', '{', m, { 'content-type': 'application/json' }), url, opId, false);
    expectConflict(await post(`/v2/payments/${p.id}/refunds`, 'op-1', {}), `/v2/payments/${p.id}/refunds`, opId, false);
    expectConflict(await post(`/v2/payments/${p.id}/voids`, 'op-1', undefined), `/v2/payments/${p.id}/voids`, opId, false);
    const after = (await t.app.inject({ url: `/v2/payments/${p.id}`, headers: m.auth })).json();
    assert.equal(after.captures.length, 1);
    assert.equal(after.refunds.length, 0);
    assert.equal(after.voids.length, 0);
    assert.equal(after.amounts.total_captured, 1000);
  });

  it('payments and their operations keep the key\'s fingerprint in their own row: no claim is written, a keyed request costs what an unkeyed one does', async () => {
    const statements = async (fn: () => Promise<unknown>) => {
      const db = t.testDb.db;
      const query = db.query.bind(db);
      let n = 0;
      // (The statements of the requests: not the timers' of the rate limits or the request log.)
      db.query = ((...args: Parameters<typeof query>) => {
        const sql = String(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text);
        if (!/rate_limit_counters|api_request_log/.test(sql)) n++;
        return query(...args);
      }) as typeof db.query;
      try { await fn(); } finally { db.query = query; }
      return n;
    };
    const claims = () => count('SELECT count(*)::int AS n FROM idempotency_keys WHERE entity_id = $1 AND (scope = \'payments\' OR scope LIKE \'payment:%\')', [m.entityId]);
    const before = await claims();
    let p: Record<string, any> = {};
    const keyed = await statements(async () => { p = (await post('/v2/payments', 'own-1', paymentBody(3000))).json(); });
    const unkeyed = await statements(() => post('/v2/payments', undefined, paymentBody(3000)));
    assert.equal(keyed, unkeyed, 'a keyed creation: the statements of one without a key');
    const url = `/v2/payments/${p.id}/captures`;
    let opId = '';
    const keyedOp = await statements(async () => { opId = (await post(url, 'own-op-1', { amount: 100 })).headers['x-created-operation-id'] as string; });
    const unkeyedOp = await statements(() => post(url, undefined, { amount: 100 }));
    assert.equal(keyedOp, unkeyedOp, 'a keyed capture: the statements of one without a key');
    assert.equal(await claims(), before, 'no claim row for payments or their operations');
    const stored = await t.testDb.db.query<{ f: string | null }>(
      'SELECT (SELECT request_fingerprint FROM payments WHERE id = $1) AS f UNION ALL SELECT request_fingerprint FROM payment_operations WHERE id = $2', [p.id, opId]);
    assert.ok(stored.rows.every((r) => typeof r.f === 'string' && r.f.length === 64), JSON.stringify(stored.rows));
    expectConflict(await post('/v2/payments', 'own-1', paymentBody(3000)), '/v2/payments', p.id, true);
    expectConflict(await post('/v2/payments', 'own-1', paymentBody(3001)), '/v2/payments', p.id, false);
    expectConflict(await post(url, 'own-op-1', { amount: 100 }), url, opId, true);
    expectConflict(await post(url, 'own-op-1', { amount: 101 }), url, opId, false);
  });

  it('a payment keyed before its row kept the fingerprint: same_request from the claim the previous version wrote', async () => {
    const p = (await post('/v2/payments', 'legacy-1', paymentBody(1200))).json();
    // As the previous version left it: the payment's key without a fingerprint, the claim with it.
    const fingerprint = (await t.testDb.db.query<{ f: string }>('SELECT request_fingerprint AS f FROM payments WHERE id = $1', [p.id])).rows[0]!.f;
    await t.testDb.db.query('UPDATE payments SET request_fingerprint = NULL WHERE id = $1', [p.id]);
    await t.testDb.db.query(
      `INSERT INTO idempotency_keys (entity_id, scope, key, claim_id, fingerprint, resource_id, completed_at)
       VALUES ($1, 'payments', 'legacy-1', gen_random_uuid(), $2, $3, now())`, [m.entityId, fingerprint, p.id]);
    expectConflict(await post('/v2/payments', 'legacy-1', paymentBody(1200)), '/v2/payments', p.id, true);
    expectConflict(await post('/v2/payments', 'legacy-1', paymentBody(1300)), '/v2/payments', p.id, false);
  });

  it('POST /v2/client-sessions honours keys: a retry creates no second session', async () => {
    const first = await post('/v2/client-sessions', 'cs-1', sessionBody(1500));
    assert.equal(first.statusCode, 200, first.body);
    const id = first.json().id as string;
    expectConflict(await post('/v2/client-sessions', 'cs-1', sessionBody(1500)), '/v2/client-sessions', id, true);
    await otherRequestsConflict('/v2/client-sessions', 'cs-1', id, sessionBody(1600));
    assert.equal(await count('SELECT count(*)::int AS n FROM client_sessions WHERE entity_id = $1 AND amount IN (1500, 1600)', [m.entityId]), 1);
    // Without a key each call is a new session; another entity's key is its own.
    assert.equal((await post('/v2/client-sessions', undefined, sessionBody(1700))).statusCode, 200);
    assert.equal((await post('/v2/client-sessions', undefined, sessionBody(1700))).statusCode, 200);
    assert.equal(await count('SELECT count(*)::int AS n FROM client_sessions WHERE entity_id = $1 AND amount = 1700', [m.entityId]), 2);
    assert.equal((await post('/v2/client-sessions', 'cs-1', sessionBody(1500), other)).statusCode, 200);
  });

  it('POST /v2/payment-links honours keys: a retry creates no second link', async () => {
    const first = await post('/v2/payment-links', 'pl-1', linkBody(2500));
    assert.equal(first.statusCode, 200, first.body);
    const id = first.json().id as string;
    expectConflict(await post('/v2/payment-links', 'pl-1', linkBody(2500)), '/v2/payment-links', id, true);
    await otherRequestsConflict('/v2/payment-links', 'pl-1', id, linkBody(2600));
    assert.equal(await count('SELECT count(*)::int AS n FROM payment_links WHERE entity_id = $1 AND amount IN (2500, 2600)', [m.entityId]), 1);
  });

  it('a first request refused by the service gives its key back; a malformed key is a 400 naming the header', async () => {
    const past = { ...sessionBody(1800), expires_at: '2001-01-01T00:00:00.000Z' };
    expectProblem(await post('/v2/client-sessions', 'cs-refused', past), 400);
    const next = await post('/v2/client-sessions', 'cs-refused', sessionBody(1800));
    assert.equal(next.statusCode, 200, next.body);
    const bad = expectProblem(await post('/v2/client-sessions', 'with space', sessionBody(1800)), 400);
    assert.equal(bad.invalid_params?.[0]?.name, 'x-idempotency-key');
  });

  it('POST /v2/webhook-endpoint/secret/rotate with a key rotates once', async () => {
    const url = '/v2/webhook-endpoint/secret/rotate';
    const first = await post(url, 'rot-1', { previous_secret_valid_seconds: 60 });
    assert.equal(first.statusCode, 200, first.body);
    const version = first.json().version as number;
    expectConflict(await post(url, 'rot-1', { previous_secret_valid_seconds: 60 }), url, m.entityId, true);
    expectConflict(await post(url, 'rot-1', { previous_secret_valid_seconds: 61 }), url, m.entityId, false);
    expectConflict(await post(url, 'rot-1', { previous_secret_valid_seconds: 'x' }), url, m.entityId, false);
    const next = await post(url, 'rot-2', {});
    assert.equal(next.statusCode, 200, next.body);
    assert.equal(next.json().version, version + 1, 'the replays rotated nothing');
  });

  it('concurrent requests with one key: one creates, the others are 409 naming it', async () => {
    const all = await Promise.all(Array.from({ length: 6 }, () => post('/v2/payment-links', 'pl-race', linkBody(3100))));
    const ok = all.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1, all.map((r) => `${r.statusCode} ${r.body}`).join('\n'));
    const id = ok[0]!.json().id as string;
    for (const r of all.filter((x) => x !== ok[0])) expectConflict(r, '/v2/payment-links', id, true);
    assert.equal(await count('SELECT count(*)::int AS n FROM payment_links WHERE entity_id = $1 AND amount = 3100', [m.entityId]), 1);
  });

  it('stores a keyed hash of the request, never the body (no card number in clear)', async () => {
    const { rows } = await t.testDb.db.query<{ fingerprint: string; text: string }>(
      'SELECT fingerprint, row_to_json(k)::text AS text FROM idempotency_keys k WHERE entity_id = $1', [m.entityId]);
    assert.ok(rows.length >= 5);
    for (const r of rows) {
      assert.match(r.fingerprint, /^[0-9a-f]{64}$/);
      assert.ok(!r.text.includes(PAN) && !r.text.includes('amount'), r.text);
    }
  });
});
