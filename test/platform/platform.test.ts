// The platform: one problem+json handler for every error, request ids, health,
// metrics, the OpenAPI document, signing keys and their rotation, migrations.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { REDIRECTION_KEYS } from '../../src/checkout/redirection-token.ts';
import { decrypt, encrypt } from '../../src/platform/crypto/secrets.ts';
import { loadMigrations, migrate } from '../../src/platform/db/migrator.ts';
import { buildApp } from '../../src/app.ts';
import { createTestApp, expectProblem, MASTER_KEY, type TestApp } from '../helpers/app.ts';

describe('platform', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ bodyLimitBytes: 4096 }, {
      beforeReady: (app) => {
        app.get('/test/boom', async () => {
          throw new Error('SELECT secret FROM internals WHERE password = 1');
        });
        app.post('/test/echo', async (req) => req.body);
      },
    });
  });
  after(() => t.close());

  it('renders an unknown route as a 404 problem', async () => {
    const res = await t.app.inject({ url: '/nope?x=1' });
    const p = expectProblem(res, 404);
    assert.equal(p.instance, '/nope');
    assert.equal(p.request_id, res.headers['x-request-id']);
  });

  it('hides the internals of a 500', async () => {
    const res = await t.app.inject({ url: '/test/boom' });
    const p = expectProblem(res, 500);
    assert.doesNotMatch(res.body, /secret|password|internals|Error/);
    assert.equal(p.type, 'urn:eu.service:internal-error');
  });

  it('refuses invalid JSON, wrong content types and oversized bodies', async () => {
    expectProblem(await t.app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload: '{"a":' }), 400);
    expectProblem(await t.app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/xml' }, payload: '<a/>' }), 415);
    const big = JSON.stringify({ a: 'x'.repeat(5000) });
    assert.equal(expectProblem(await t.app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload: big }), 413).type, 'urn:eu.service:payload-too-large');
    expectProblem(await t.app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload: '{"__proto__":{"x":1}}' }), 400);
  });

  it('keeps a valid incoming request id and replaces an invalid one', async () => {
    const kept = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'abc-123' } });
    assert.equal(kept.headers['x-request-id'], 'abc-123');
    const replaced = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'bad id with spaces' } });
    assert.match(String(replaced.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });

  it('answers health, readiness and Prometheus metrics', async () => {
    assert.deepEqual((await t.app.inject({ url: '/healthz' })).json(), { status: 'ok' });
    assert.deepEqual((await t.app.inject({ url: '/readyz' })).json(), { status: 'ready' });
    await t.app.inject({ url: '/v2/signing-jwks' });
    const metrics = await t.app.inject({ url: '/metrics' });
    assert.match(metrics.body, /payd_http_requests_total\{method="GET",route="\/v2\/signing-jwks",status="401"\} \d+/);
    assert.match(metrics.body, /payd_http_request_duration_seconds_bucket/);
  });

  it('shows the PostgreSQL pool in the metrics (PostgreSQL only)', async () => {
    const body = (await t.app.inject({ url: '/metrics' })).body;
    const gauge = (re: RegExp) => Number(re.exec(body)?.[1]);
    if (t.testDb.url === undefined) {
      assert.doesNotMatch(body, /payd_db_pool_/, 'the embedded database has no pool');
      return;
    }
    // The test helper opens its pool with 20 connections (test/helpers/db.ts).
    assert.equal(gauge(/^payd_db_pool_max (\d+)$/m), 20);
    const inUse = gauge(/^payd_db_pool_connections\{state="in_use"\} (\d+)$/m);
    const idle = gauge(/^payd_db_pool_connections\{state="idle"\} (\d+)$/m);
    assert.ok(idle >= 1, 'the statements before the scrape left connections idle');
    assert.ok(inUse >= 0 && inUse + idle <= 20, `${inUse} in use and ${idle} idle of 20`);
    // Nothing waits for a connection on an idle process: the pool is read before the
    // scrape's own backlog queries start (they showed as 1 waiting at every scrape).
    assert.equal(gauge(/^payd_db_pool_waiting (\d+)$/m), 0);
  });

  it('serves an OpenAPI 3.1 document generated from the route schemas, and a reference page', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    assert.equal(doc.openapi, '3.1.0');
    for (const p of ['/oauth/token', '/v2/signing-jwks', '/v2/payments', '/v2/payments/{id}/captures', '/v2/client-sessions/{id}/abort', '/admin/v1/entities',
      '/v2/payment-links', '/v2/payment-links/{id}', '/v2/payment-links/{id}/cancel', '/checkout/v1/session', '/checkout/v1/session/payments']) {
      assert.ok(doc.paths[p], `${p} is documented`);
    }
    assert.deepEqual(doc.paths['/admin/v1/entities'].post.tags, ['Operator']);
    for (const s of ['Problem', 'Payment', 'ClientSession', 'Order', 'Customer', 'PaymentLink', 'PaymentLinkWebhook']) assert.ok(doc.components.schemas[s], s);
    assert.ok(doc.paths['/v2/payments'].post.responses['409'].content['application/problem+json']);
    assert.ok(doc.components.securitySchemes.apiKey);
    assert.equal(doc.components.securitySchemes.sessionCredential.name, 'x-payd-session');
    const page = await t.app.inject({ url: '/docs/' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /html/);
  });

  it('publishes signing keys that verify redirection tokens, across a rotation', async () => {
    const m = await t.createMerchant();
    const claims = { client_session_id: crypto.randomUUID(), payment_id: crypto.randomUUID(), authorization_status: 'AUTHORIZED', client_session_status: 'SUBMITTED' };
    const oldToken = await t.app.services.redirection.sign(m.entityId, claims);
    const jwks1 = (await t.app.inject({ url: '/v2/signing-jwks', headers: { 'x-api-key': m.apiKey } })).json();
    assert.equal(jwks1.keys.length, 1);
    const k = jwks1.keys[0];
    assert.equal(k.kty, 'RSA');
    assert.equal(k.alg, 'RS256');
    for (const f of ['e', 'n', 'kid']) assert.equal(typeof k[f], 'string');
    const { payload } = await jwtVerify(oldToken, createLocalJWKSet(jwks1), { issuer: 'http://payd.test', audience: m.entityId });
    assert.equal(payload.authorization_status, 'AUTHORIZED');

    const newKid = await t.app.services.keys.rotate(REDIRECTION_KEYS);
    const jwks2 = (await t.app.inject({ url: '/v2/signing-jwks', headers: { 'x-api-key': m.apiKey } })).json();
    assert.deepEqual(jwks2.keys.map((x: { kid: string }) => x.kid).sort(), [k.kid, newKid].sort());
    const newToken = await t.app.services.redirection.sign(m.entityId, claims);
    const set = createLocalJWKSet(jwks2);
    assert.equal((await jwtVerify(newToken, set)).protectedHeader.kid, newKid);
    await jwtVerify(oldToken, set, { audience: m.entityId });
    await assert.rejects(jwtVerify(newToken, createLocalJWKSet(jwks1)));
  });

  it('keeps private keys encrypted at rest', async () => {
    const { rows } = await t.testDb.db.query<{ private_key_enc: string; kid: string }>('SELECT kid, private_key_enc FROM signing_keys');
    assert.ok(rows.length >= 2);
    // Sealed: the envelope's prefix, and neither a PEM, a DER in base64 (MII... at the start) nor a JWK's
    // private member. (A bare /MII/ anywhere matched random ciphertext about once in a hundred runs.)
    for (const r of rows) {
      assert.match(r.private_key_enc, /^v1\./);
      assert.doesNotMatch(r.private_key_enc, /PRIVATE KEY|^MII|"d"\s*:/);
    }
    const key = Buffer.alloc(32, 7);
    const sealed = encrypt(key, 'secret', 'kid-1');
    assert.equal(decrypt(key, sealed, 'kid-1'), 'secret');
    assert.throws(() => decrypt(key, sealed, 'kid-2'));
    assert.throws(() => decrypt(Buffer.alloc(32, 8), sealed, 'kid-1'));
    const parts = sealed.split('.');
    parts[3] = Buffer.from('tampered').toString('base64url');
    assert.throws(() => decrypt(key, parts.join('.'), 'kid-1'));
  });

  it('refuses to start with another master key than the one that sealed the stored keys', async () => {
    await assert.rejects(
      buildApp({ config: t.config, db: t.testDb.db, masterKey: Buffer.alloc(32, 9), logger: false }),
      /The master key does not open the .* keys stored in this database/,
    );
    // The right key still opens them.
    const again = await buildApp({ config: t.config, db: t.testDb.db, masterKey: MASTER_KEY, logger: false });
    await again.close();
  });

  it('applies migrations once and refuses an edited one', async () => {
    assert.deepEqual(await migrate(t.testDb.db), []);
    const edited = loadMigrations().map((m) => (m.version === 1 ? { ...m, checksum: 'x'.repeat(64) } : m));
    await assert.rejects(migrate(t.testDb.db, edited), /edited after it was applied/);
  });
});
