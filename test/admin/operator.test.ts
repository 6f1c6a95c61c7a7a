// Operator API (entities, API keys) and the token endpoint's refusals: each bad request
// is a clear 4xx problem and changes nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, createTestApp, expectProblem, type TestApp } from '../helpers/app.ts';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

async function counts(t: TestApp) {
  const { rows } = await t.testDb.db.query<{ e: number; k: number; r: number }>(
    'SELECT (SELECT count(*)::int FROM entities) AS e, (SELECT count(*)::int FROM api_keys) AS k, (SELECT count(*)::int FROM api_keys WHERE revoked_at IS NOT NULL) AS r',
  );
  return rows[0];
}

describe('operator API', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('creates, gets and pages through entities', async () => {
    const names = ['A', 'B', 'C'];
    for (const name of names) {
      const res = await t.app.inject({ method: 'POST', url: '/admin/v1/entities', headers: t.adminHeaders, payload: { name } });
      assert.equal(res.statusCode, 201);
      assert.deepEqual(Object.keys(res.json()).sort(), ['checkout_origins', 'created_at', 'id', 'name'], 'checkout_origins: issue 42 (frame-ancestors)');
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/admin/v1/entities?limit=2${cursor ? `&starting_after=${cursor}` : ''}`;
      const res = await t.app.inject({ url, headers: t.adminHeaders });
      assert.equal(res.statusCode, 200);
      const page = res.json() as { data: Array<{ name: string }>; next_cursor: string | null };
      assert.ok(page.data.length <= 2);
      seen.push(...page.data.map((e) => e.name));
      cursor = page.next_cursor;
    } while (cursor);
    assert.deepEqual(seen.filter((n) => names.includes(n)), names);
    const one = await t.app.inject({ method: 'POST', url: '/admin/v1/entities', headers: t.adminHeaders, payload: { name: 'D' } });
    const got = await t.app.inject({ url: `/admin/v1/entities/${one.json().id}`, headers: t.adminHeaders });
    assert.equal(got.json().name, 'D');
    expectProblem(await t.app.inject({ url: `/admin/v1/entities/${crypto.randomUUID()}`, headers: t.adminHeaders }), 404);
    const bad = expectProblem(await t.app.inject({ url: '/admin/v1/entities/not-a-uuid', headers: t.adminHeaders }), 400);
    assert.equal(bad.invalid_params?.[0]?.name, 'id');
    assert.equal(bad.invalid_params?.[0]?.in, 'path');
    expectProblem(await t.app.inject({ url: '/admin/v1/entities?starting_after=garbage', headers: t.adminHeaders }), 400);
    expectProblem(await t.app.inject({ url: '/admin/v1/entities?limit=0', headers: t.adminHeaders }), 400);
  });

  it('refuses invalid entity bodies naming the field, and writes nothing', async () => {
    const before = await counts(t);
    for (const payload of [{}, { name: '' }, { name: 5 }, { name: 'x'.repeat(201) }, { name: 'ok', extra: 1 }, { name: '   ' }]) {
      const p = expectProblem(await t.app.inject({ method: 'POST', url: '/admin/v1/entities', headers: t.adminHeaders, payload }), 400);
      assert.ok(p.invalid_params?.some((x) => x.name === 'name' || x.name === 'extra'), JSON.stringify(p));
    }
    assert.deepEqual(await counts(t), before);
  });

  it('shows an API key once and keeps only its hash', async () => {
    const m = await t.createMerchant();
    const list = await t.app.inject({ url: `/admin/v1/entities/${m.entityId}/api-keys`, headers: t.adminHeaders });
    assert.equal(list.statusCode, 200);
    assert.doesNotMatch(list.body, new RegExp(m.apiKey));
    assert.equal(list.json().data[0].prefix, m.apiKey.slice(0, 12));
    const { rows } = await t.testDb.db.query<{ row: string }>('SELECT row_to_json(k)::text AS row FROM api_keys k');
    for (const r of rows) assert.ok(!r.row.includes(m.apiKey.slice(8)), 'the key is stored hashed');
  });

  it('revokes keys idempotently and only through their own entity', async () => {
    const a = await t.createMerchant('a');
    const b = await t.createMerchant('b');
    expectProblem(await t.app.inject({ method: 'DELETE', url: `/admin/v1/entities/${b.entityId}/api-keys/${a.apiKeyId}`, headers: t.adminHeaders }), 404);
    const first = await t.app.inject({ method: 'DELETE', url: `/admin/v1/entities/${a.entityId}/api-keys/${a.apiKeyId}`, headers: t.adminHeaders });
    assert.equal(first.statusCode, 200);
    const second = await t.app.inject({ method: 'DELETE', url: `/admin/v1/entities/${a.entityId}/api-keys/${a.apiKeyId}`, headers: t.adminHeaders });
    assert.equal(second.json().revoked_at, first.json().revoked_at);
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, 'x-api-key': b.apiKey }, payload: 'grant_type=client_credentials' });
    assert.equal(res.statusCode, 200, 'the other entity is unaffected');
  });

  it('requires the operator token', async () => {
    expectProblem(await t.app.inject({ url: '/admin/v1/entities' }), 401);
    const wrong = await t.app.inject({ url: '/admin/v1/entities', headers: { authorization: 'Bearer wrong-token-wrong-token' } });
    expectProblem(wrong, 401);
    assert.match(String(wrong.headers['www-authenticate']), /Bearer/);
    const m = await t.createMerchant();
    expectProblem(await t.app.inject({ url: '/admin/v1/entities', headers: m.auth }), 401);
  });
});

describe('operator API switched off', () => {
  it('answers 404 when PAYD_ADMIN_TOKEN is unset', async () => {
    const t = await createTestApp({ adminToken: undefined });
    try {
      expectProblem(await t.app.inject({ url: '/admin/v1/entities', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }), 404);
    } finally {
      await t.close();
    }
  });
});

describe('token endpoint refusals', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('refuses every malformed token request with a problem carrying the OAuth error', async () => {
    const m = await t.createMerchant();
    const before = await counts(t);
    const cases: Array<[Record<string, string>, string, number, string]> = [
      [{ ...FORM, 'x-api-key': m.apiKey }, '', 400, 'invalid_request'],
      [{ ...FORM, 'x-api-key': m.apiKey }, 'grant_type=client_credentials&grant_type=client_credentials', 400, 'invalid_request'],
      [{ ...FORM, 'x-api-key': m.apiKey }, 'grant_type=password', 400, 'unsupported_grant_type'],
      [{ ...FORM, 'x-api-key': m.apiKey }, 'grant_type=client_credentials&scope=admin', 400, 'invalid_scope'],
      [{ 'content-type': 'application/json', 'x-api-key': m.apiKey }, '{"grant_type":"client_credentials"}', 400, 'invalid_request'],
      [{ 'content-type': 'text/plain', 'x-api-key': m.apiKey }, 'grant_type=client_credentials', 415, ''],
      [FORM, 'grant_type=client_credentials', 401, 'invalid_client'],
      [{ ...FORM, 'x-api-key': 'nonsense' }, 'grant_type=client_credentials', 401, 'invalid_client'],
      [{ ...FORM, authorization: `Bearer ${m.token}` }, 'grant_type=client_credentials', 401, 'invalid_client'],
    ];
    for (const [headers, payload, status, error] of cases) {
      const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers, payload });
      const p = expectProblem(res, status);
      if (error) assert.equal(p.error, error, `${payload}: ${res.body}`);
      assert.doesNotMatch(res.body, /access_token/);
    }
    assert.deepEqual(await counts(t), before);
  });
});
