// Hostile input at the edge: text PostgreSQL cannot store (NUL, lone surrogates) in
// any body, form, query or path field is a 400 problem naming the field, before any
// handler or query runs; Fastify's own refusals (bad percent-encoding, over-long path
// parameters) are problem+json too; a validly signed access token whose subject is not an
// entity id is a 401. Each case below was a 500 (issue 12) and must change no row.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { ACCESS_TOKEN_KEYS } from '../../src/identity/oauth/access-tokens.ts';
import { signJwt } from '../../src/platform/crypto/jwt.ts';
import { createTestApp, expectOAuthError, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const JSON_CT = { 'content-type': 'application/json' };
const card = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };
const payment = (reference: string) => ({
  amount: 1000, currency: 'EUR', order: { reference }, split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card }],
});
// Both hostile texts, as JSON escapes (what a client sends: JSON.stringify keeps a lone surrogate as "\ud800").
const HOSTILE = [
  { label: 'NUL', text: 'a\u0000b', json: '"a\\u0000b"' },
  { label: 'lone surrogate', text: 'a\ud800b', json: '"a\\ud800b"' },
];

describe('hostile input', () => {
  let t: TestApp;
  let m: Merchant;
  let mgmtToken: string;
  let userId: string;
  let clientId: string;

  /**
   * Row counts of every table of the public schema: a refused request changes none (but
   * the rate-limit counters, which count refused requests too and are synced by a timer,
   * and the request log, which records refused calls too, flushed by a timer).
   */
  const fingerprint = async () => {
    const tables = (await t.testDb.db.query<{ t: string }>(`SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('rate_limit_counters', 'api_request_log') ORDER BY 1`)).rows;
    const out: Record<string, number> = {};
    for (const { t: name } of tables) out[name] = Number((await t.testDb.db.query<{ n: string }>(`SELECT count(*) AS n FROM "${name}"`)).rows[0]!.n);
    return out;
  };

  const refused = async (send: () => Promise<LightMyRequestResponse>, field: string, where: string) => {
    const before = await fingerprint();
    const res = await send();
    // The OAuth endpoints answer application/json {error, error_description} (RFC 6749), with invalid_params kept.
    const p = /^application\/json/.test(String(res.headers['content-type'])) ? expectOAuthError(res, 400, 'invalid_request') : expectProblem(res, 400);
    const named = p.invalid_params?.find((x) => x.name === field);
    assert.ok(named, `expected invalid_params to name ${field}: ${res.body}`);
    assert.equal(named.in, where);
    assert.deepEqual(await fingerprint(), before, `rows changed after: ${res.body}`);
    return p;
  };

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('hostile');
    const app = await t.app.inject({
      method: 'POST', url: '/admin/v1/identity/applications', headers: t.adminHeaders,
      payload: {
        name: 'Back office', callback_urls: ['https://bo.example/cb'], token_endpoint_auth_method: 'client_secret_post',
        management_scopes: ['read:users', 'create:users', 'update:users', 'create:clients', 'read:clients', 'update:clients'],
      },
    });
    assert.equal(app.statusCode, 201, app.body);
    clientId = app.json().client_id;
    const tok = await t.app.inject({
      method: 'POST', url: '/oauth/token', headers: FORM,
      payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: app.json().client_secret }).toString(),
    });
    assert.equal(tok.statusCode, 200, tok.body);
    mgmtToken = tok.json().access_token;
    const user = await t.app.inject({
      method: 'POST', url: '/admin/v1/identity/users', headers: t.adminHeaders, payload: { email: 'hostile@example.com', password: 'a long enough password' },
    });
    assert.equal(user.statusCode, 201, user.body);
    userId = user.json().id;
  });
  after(() => t.close());

  for (const h of HOSTILE) {
    describe(`text with a ${h.label}`, () => {
      it('is refused in JSON bodies of the payment API, naming the nested field', async () => {
        const body = JSON.stringify(payment('REF')).replace('"REF"', h.json);
        const p = await refused(() => t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...m.auth, ...JSON_CT }, payload: body }), 'order.reference', 'body');
        assert.match(p.invalid_params![0]!.reason, h.label === 'NUL' ? /NUL/ : /surrogate/);
        const session = `{"amount":2500,"currency":"EUR","order":{"reference":${h.json}}}`;
        await refused(() => t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: { ...m.auth, ...JSON_CT }, payload: session }), 'order.reference', 'body');
      });

      it('is refused in operator bodies', async () => {
        await refused(() => t.app.inject({ method: 'POST', url: '/admin/v1/entities', headers: { ...t.adminHeaders, ...JSON_CT }, payload: `{"name":${h.json}}` }), 'name', 'body');
        await refused(() => t.app.inject({
          method: 'POST', url: '/admin/v1/identity/applications', headers: { ...t.adminHeaders, ...JSON_CT },
          payload: `{"name":${h.json},"callback_urls":["https://x.example/cb"]}`,
        }), 'name', 'body');
      });

      it('is refused in Management API bodies', async () => {
        const auth = { authorization: `Bearer ${mgmtToken}`, ...JSON_CT };
        await refused(() => t.app.inject({ method: 'POST', url: '/api/v2/clients', headers: auth, payload: `{"name":${h.json},"callback_urls":["https://x.example/cb"]}` }), 'name', 'body');
        await refused(() => t.app.inject({ method: 'PATCH', url: `/api/v2/users/${userId}`, headers: auth, payload: `{"given_name":${h.json}}` }), 'given_name', 'body');
        // In an array, too.
        await refused(() => t.app.inject({ method: 'POST', url: '/api/v2/clients', headers: auth, payload: `{"name":"ok","callback_urls":["https://x.example/cb",${h.json}]}` }), 'callback_urls[1]', 'body');
      });

      it('is refused as a key of a JSON object (named with the character escaped)', async () => {
        await refused(() => t.app.inject({ method: 'POST', url: '/admin/v1/entities', headers: { ...t.adminHeaders, ...JSON_CT }, payload: `{"name":"x",${h.json}:1}` }), h.json.slice(1, -1), 'body');
      });
    });
  }

  it('refuses JSON nested deeper than 32 levels, however deep, naming where', async () => {
    const deep = (n: number) => '{"name":"x","a":' + '['.repeat(n) + ']'.repeat(n) + '}';
    for (const n of [40, 100_000]) {
      const p = await refused(() => t.app.inject({ method: 'POST', url: '/admin/v1/entities', headers: { ...t.adminHeaders, ...JSON_CT }, payload: deep(n) }), `a${'[0]'.repeat(31)}`, 'body');
      assert.match(p.invalid_params![0]!.reason, /nested more than 32 levels/);
    }
    // 30 levels pass the guard (and are refused by the schema, as an unknown field).
    const ok = await t.app.inject({ method: 'POST', url: '/admin/v1/entities', headers: { ...t.adminHeaders, ...JSON_CT }, payload: deep(30) });
    assert.equal(expectProblem(ok, 400).invalid_params?.[0]?.reason, 'is not a known field');
  });

  it('refuses a NUL in form-encoded bodies of the OAuth endpoints, as they answer today', async () => {
    for (const url of ['/oauth/introspect', '/oauth/revoke']) {
      await refused(() => t.app.inject({ method: 'POST', url, headers: FORM, payload: 'token=abc&client_id=a%00b' }), 'client_id', 'body');
    }
    await refused(() => t.app.inject({ method: 'POST', url: '/oauth/token', headers: FORM, payload: 'grant_type=client_credentials&client_id=a%00b&client_secret=x' }), 'client_id', 'body');
  });

  it('refuses Basic client credentials with a NUL or that are not UTF-8, as the OAuth endpoints answer', async () => {
    const basic = (bytes: Buffer) => ({ ...FORM, authorization: `Basic ${bytes.toString('base64')}` });
    for (const creds of [Buffer.from('a\u0000:secret'), Buffer.from('a%00b:secret'), Buffer.from([0xed, 0xa0, 0x80, 0x3a, 0x78])]) {
      for (const url of ['/oauth/introspect', '/oauth/revoke', '/oauth/token']) {
        const p = await refused(() => t.app.inject({ method: 'POST', url, headers: basic(creds), payload: url === '/oauth/token' ? 'grant_type=client_credentials' : 'token=abc' }), 'authorization', 'header');
        assert.equal(p.error, 'invalid_request');
      }
    }
  });

  it('refuses a NUL in path parameters and query strings', async () => {
    const auth = { authorization: `Bearer ${mgmtToken}` };
    await refused(() => t.app.inject({ url: '/api/v2/clients/a%00b', headers: auth }), 'id', 'path');
    await refused(() => t.app.inject({ url: `/admin/v1/entities/${m.entityId}/webhook-events?type=%00`, headers: t.adminHeaders }), 'type', 'query');
    await refused(() => t.app.inject({ url: '/api/v2/users?email=a%00@example.com', headers: auth }), 'email', 'query');
  });

  it('refuses a NUL in an API key or a session credential header with 401 or 400, never 500', async () => {
    const key = await t.app.inject({ url: '/v2/signing-jwks', headers: { 'x-api-key': 'a\u0000b' } });
    assert.ok(key.statusCode < 500, key.body);
    expectProblem(key, key.statusCode);
    const session = await t.app.inject({ url: '/checkout/v1/session', headers: { 'x-payd-session': 'a\u0000b' } });
    assert.ok(session.statusCode < 500, session.body);
    expectProblem(session, session.statusCode);
  });

  it('takes a cookie whose percent-encoding is malformed for no cookie (pages served to browsers)', async () => {
    for (const url of ['/console', '/console/users', '/oauth/authorize?client_id=x']) {
      for (const cookie of ['payd_console=%ED%A0%80', 'payd_console=%', 'payd_idp_session=%E0%A4%A; payd_idp_csrf=%00']) {
        const res = await t.app.inject({ url, headers: { cookie } });
        assert.ok(res.statusCode < 500, `${url} ${cookie}: ${res.statusCode} ${res.body.slice(0, 200)}`);
      }
    }
  });

  it('answers 401 to a token signed with the real key whose subject is not an entity id', async () => {
    const key = await t.app.services.keys.signingKey(ACCESS_TOKEN_KEYS.name);
    const now = Math.floor(Date.now() / 1000);
    for (const sub of ['not-a-uuid', 'a\u0000b', 42, undefined]) {
      const token = await signJwt('HS256', { kid: key.kid, typ: 'at+jwt' }, {
        scope: 'payment-api', iss: t.config.baseUrl, aud: 'payd', ...(sub === undefined ? {} : { sub }), iat: now, exp: now + 60, jti: randomUUID(),
      }, key.privateKey);
      const res = await t.app.inject({ url: `/v2/payments/${randomUUID()}`, headers: { authorization: `Bearer ${token}` } });
      const p = expectProblem(res, 401);
      assert.match(String(p.detail), /not valid/);
    }
  });

  it('renders a malformed percent-encoding and an over-long path parameter as problem+json', async () => {
    const bad = await t.app.inject({ url: '/v2/payments/%E0%A4%A', headers: m.auth });
    const p = expectProblem(bad, 400);
    assert.equal(p.type, 'urn:eu.service:invalid-request');
    assert.equal(bad.headers['x-request-id'], p.request_id);
    assert.equal(p.code, undefined);
    const long = await t.app.inject({ url: `/v2/payments/${'a'.repeat(500)}`, headers: m.auth });
    const q = expectProblem(long, 414);
    assert.equal(q.type, 'urn:eu.service:uri-too-long');
    assert.equal(long.headers['x-content-type-options'], 'nosniff');
  });

  it('answers a request the HTTP parser refuses with problem+json on the socket', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as { port: number };
    for (const raw of ['GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\n\r\n', 'NOT HTTP AT ALL\r\n\r\n']) {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.end(raw));
        let data = '';
        socket.on('data', (d) => (data += d.toString()));
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
      });
      assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/);
      assert.match(answer, /\r\nContent-Type: application\/problem\+json/);
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
      assert.equal(body.status, 400);
      assert.equal(body.type, 'urn:eu.service:invalid-request');
    }
  });

  it('keeps accepting ordinary unicode: accents, emoji (surrogate pairs), CJK', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/admin/v1/entities', headers: t.adminHeaders, payload: { name: 'Café 😀 \u2028 東京' } });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.json().name, 'Café 😀 \u2028 東京');
  });
});
