// Access tokens: payd's JWTs (platform/crypto/jwt.ts, on jose: HS256 for access tokens,
// EdDSA verifiable by the same rules) interoperate with plain jose both ways, refuse
// algorithm confusion, and revocation reaches other payd processes at once (NOTIFY on
// PostgreSQL).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSecretKey, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { SignJWT, decodeProtectedHeader, jwtVerify } from 'jose';
import { buildApp } from '../../src/app.ts';
import { createPgDb } from '../../src/platform/db/pg.ts';
import { decodeJwt, signJwt, verifyJwt } from '../../src/platform/crypto/jwt.ts';
import { ACCESS_TOKEN_KEYS, AccessTokens, RevokedKeys, VERIFIED_MAX } from '../../src/identity/oauth/access-tokens.ts';
import type { KeyStore } from '../../src/platform/crypto/keystore.ts';
import { MASTER_KEY, createTestApp, expectProblem, getToken, type TestApp } from '../helpers/app.ts';
import { poll } from '../helpers/wait.ts';

const opts = { issuer: 'http://payd.test', audience: 'payd', typ: 'at+jwt' };

describe('EdDSA JWS', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const now = () => Math.floor(Date.now() / 1000);

  it('signs tokens that jose verifies', async () => {
    const token = await signJwt('EdDSA', { kid: 'k1', typ: 'at+jwt' }, { iss: opts.issuer, aud: 'payd', sub: 's', iat: now(), exp: now() + 60, jti: randomUUID() }, privateKey);
    const { payload, protectedHeader } = await jwtVerify(token, publicKey, { issuer: opts.issuer, audience: 'payd', typ: 'at+jwt', algorithms: ['EdDSA'] });
    assert.equal(payload.sub, 's');
    assert.equal(protectedHeader.kid, 'k1');
  });

  it('verifies tokens jose signed, and refuses tampered, expired, foreign and wrong-alg tokens', async () => {
    const good = await new SignJWT({}).setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt' }).setIssuer(opts.issuer).setAudience('payd')
      .setSubject('s').setIssuedAt().setExpirationTime('60s').setJti('j').sign(privateKey);
    assert.equal((await verifyJwt('EdDSA', good, publicKey, opts)).sub, 's');
    const [h, p, s] = good.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: 'evil' })).toString('base64url')}.${s}`;
    await assert.rejects(verifyJwt('EdDSA', tampered, publicKey, opts), /bad signature/);
    const expired = await signJwt('EdDSA', { typ: 'at+jwt' }, { iss: opts.issuer, aud: 'payd', sub: 's', iat: now() - 100, exp: now() - 50, jti: 'j' }, privateKey);
    await assert.rejects(verifyJwt('EdDSA', expired, publicKey, opts), /expired/);
    const other = generateKeyPairSync('ed25519');
    await assert.rejects(verifyJwt('EdDSA', good, other.publicKey, opts), /bad signature/);
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${p}.`;
    await assert.rejects(verifyJwt('EdDSA', none, publicKey, opts), /unexpected header/);
    assert.throws(() => decodeJwt('a.b'), /malformed/);
    await assert.rejects(verifyJwt('EdDSA', good, publicKey, { ...opts, audience: 'other' }), /audience/);
  });
});

describe('HS256 JWS', () => {
  const secret = createSecretKey(randomBytes(32));
  const now = () => Math.floor(Date.now() / 1000);
  const claims = () => ({ iss: opts.issuer, aud: 'payd', sub: 's', iat: now(), exp: now() + 60, jti: randomUUID() });

  it('interoperates with jose both ways', async () => {
    const ours = await signJwt('HS256', { kid: 'k1', typ: 'at+jwt' }, claims(), secret);
    const { payload } = await jwtVerify(ours, secret, { issuer: opts.issuer, audience: 'payd', typ: 'at+jwt', algorithms: ['HS256'] });
    assert.equal(payload.sub, 's');
    const theirs = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' }).sign(secret);
    assert.equal((await verifyJwt('HS256', theirs, secret, opts)).sub, 's');
  });

  it('signs the very token jose\'s SignJWT makes of the same header and claims (EdDSA too)', async () => {
    const c = claims();
    assert.equal(await signJwt('HS256', { kid: 'k1', typ: 'at+jwt' }, c, secret),
      await new SignJWT(c).setProtectedHeader({ alg: 'HS256', kid: 'k1', typ: 'at+jwt' }).sign(secret));
    const { privateKey } = generateKeyPairSync('ed25519');
    assert.equal(await signJwt('EdDSA', { typ: 'at+jwt' }, c, privateKey),
      await new SignJWT(c).setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt' }).sign(privateKey));
  });

  it('signatures asked for in one turn of the event loop (started together) each come back for their own claims', async () => {
    const many = Array.from({ length: 40 }, (_, i) => ({ ...claims(), sub: `s${i}` }));
    const tokens = await Promise.all(many.map((c, i) => signJwt('HS256', { kid: `k${i}`, typ: 'at+jwt' }, c, secret)));
    for (const [i, token] of tokens.entries()) {
      assert.equal((await verifyJwt('HS256', token, secret, opts)).sub, `s${i}`);
      assert.equal(decodeProtectedHeader(token).kid, `k${i}`);
    }
  });

  it('refuses another secret, a tampered payload, and a header naming another algorithm', async () => {
    const good = await signJwt('HS256', { typ: 'at+jwt' }, claims(), secret);
    await assert.rejects(verifyJwt('HS256', good, createSecretKey(randomBytes(32)), opts), /bad signature/);
    const [h, p, sig] = good.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: 'evil' })).toString('base64url')}.${sig}`;
    await assert.rejects(verifyJwt('HS256', tampered, secret, opts), /bad signature/);
    const { privateKey } = generateKeyPairSync('ed25519');
    const ed = await signJwt('EdDSA', { typ: 'at+jwt' }, claims(), privateKey);
    await assert.rejects(verifyJwt('HS256', ed, secret, opts), /unexpected header/);
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${p}.`;
    await assert.rejects(verifyJwt('HS256', none, secret, opts), /unexpected header/);
  });
});

describe('the verified access tokens a process remembers', () => {
  const secret = createSecretKey(randomBytes(32));
  const published = new Set(['k1']);
  const keys = {
    signingKey: async () => ({ kid: 'k1', alg: 'HS256', privateKey: secret }),
    verificationKey: async (_purpose: string, kid: string) => (published.has(kid) ? { kid, alg: 'HS256', publicKey: secret, retired: false, publicJwk: {} } : undefined),
  } as unknown as KeyStore;
  const revoked = new RevokedKeys({ revokedKeyIdsSince: async () => [] }, 3600);
  const tokens = new AccessTokens(keys, 'http://payd.test', 3600, revoked);
  const issue = async () => (await tokens.issue({ entityId: randomUUID(), apiKeyId: randomUUID(), scope: 'payment-api' })).access_token;

  it('still checks the key and the revocation of a remembered token on every use', async () => {
    const token = await issue();
    const principal = await tokens.verify(token);
    assert.equal(await tokens.verify(token), principal, 'remembered');
    revoked.add(principal.apiKeyId!);
    await assert.rejects(tokens.verify(token), /revoked/);
    const other = await issue();
    await tokens.verify(other);
    published.delete('k1');
    try {
      await assert.rejects(tokens.verify(other), /not signed by payd/);
    } finally {
      published.add('k1');
    }
  });

  it('remembers no failure, and at most VERIFIED_MAX tokens (the least recently used go first)', async () => {
    const token = await issue();
    const [h, p, sig] = token.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), scope: 'payment-api admin' })).toString('base64url')}.${sig}`;
    for (let i = 0; i < 2; i++) await assert.rejects(tokens.verify(tampered), /not valid/);
    const first = await tokens.verify(token);
    const remembered = () => (tokens as unknown as { verified: Map<string, unknown> }).verified;
    for (let i = 0; i < VERIFIED_MAX; i++) {
      await tokens.verify(await issue());
      if (i === VERIFIED_MAX / 2) assert.equal(await tokens.verify(token), first, 'used again: now the most recent');
    }
    assert.equal(remembered().size, VERIFIED_MAX);
    assert.equal(await tokens.verify(token), first, 'still remembered: used more recently than half the others');
  });
});

describe('access tokens through the app', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({}, {
      beforeReady: (app) => {
        app.get('/v2/test-protected', { config: { auth: { schemes: ['bearer'], scope: 'payment-api' } } }, async (req) => ({ entity: req.principal?.entityId }));
      },
    });
  });
  after(() => t.close());

  it('a token issued by payd opens a payment-api route; one signed with another scope is 403', async () => {
    const m = await t.createMerchant();
    assert.equal(decodeProtectedHeader(m.token).alg, 'HS256');
    const ok = await t.app.inject({ url: '/v2/test-protected', headers: m.auth });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().entity, m.entityId);
    const key = await t.app.services.keys.signingKey(ACCESS_TOKEN_KEYS.name);
    const now = Math.floor(Date.now() / 1000);
    const otherScope = await signJwt('HS256', { kid: key.kid, typ: 'at+jwt' }, { iss: 'http://payd.test', aud: 'payd', sub: m.entityId, scope: 'other', iat: now, exp: now + 60, jti: 'j' }, key.privateKey);
    expectProblem(await t.app.inject({ url: '/v2/test-protected', headers: { authorization: `Bearer ${otherScope}` } }), 403);
    const expired = await signJwt('HS256', { kid: key.kid, typ: 'at+jwt' }, { iss: 'http://payd.test', aud: 'payd', sub: m.entityId, scope: 'payment-api', iat: now - 7200, exp: now - 3600, jti: 'j' }, key.privateKey);
    const res = await t.app.inject({ url: '/v2/test-protected', headers: { authorization: `Bearer ${expired}` } });
    assert.match(String(expectProblem(res, 401).detail), /expired/);
    assert.match(String(res.headers['www-authenticate']), /invalid_token/);
  });

  it('revoking a key refuses new tokens and the tokens it issued, at once (also a token this process already verified)', async () => {
    const m = await t.createMerchant();
    for (let i = 0; i < 2; i++) assert.equal((await t.app.inject({ url: '/v2/test-protected', headers: m.auth })).statusCode, 200);
    const del = await t.app.inject({ method: 'DELETE', url: `/admin/v1/entities/${m.entityId}/api-keys/${m.apiKeyId}`, headers: t.adminHeaders });
    assert.equal(del.statusCode, 200);
    expectProblem(await t.app.inject({ url: '/v2/test-protected', headers: m.auth }), 401);
    const token = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'x-api-key': m.apiKey, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'grant_type=client_credentials' });
    assert.equal(expectProblem(token, 401).error, 'invalid_client');
  });

  it('a revocation in one process reaches another process sharing the database', async () => {
    // A second app on the same database: on PostgreSQL through its own pool and LISTEN
    // connection (like a second process); on PGlite through the same embedded database.
    const db2 = t.testDb.url ? createPgDb(t.testDb.url, 5) : t.testDb.db;
    const app2 = await buildApp({ config: t.config, db: db2, masterKey: MASTER_KEY, logger: false });
    app2.get('/v2/test-protected', { config: { auth: { schemes: ['bearer'], scope: 'payment-api' } } }, async () => ({ ok: true }));
    await app2.ready();
    try {
      const m = await t.createMerchant();
      const token2 = await getToken(app2, m.apiKey); // app2 now caches the key
      assert.equal((await app2.inject({ url: '/v2/test-protected', headers: { authorization: `Bearer ${token2}` } })).statusCode, 200);
      await t.app.inject({ method: 'DELETE', url: `/admin/v1/entities/${m.entityId}/api-keys/${m.apiKeyId}`, headers: t.adminHeaders });
      // The revocation reaches app2 through the database's notification: asked again until it has.
      const res = await poll(
        () => app2.inject({ method: 'POST', url: '/oauth/token', headers: { 'x-api-key': m.apiKey, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'grant_type=client_credentials' }),
        (r) => r.statusCode === 401, { everyMs: 25 });
      const refused = res.statusCode === 401;
      assert.ok(refused, 'the other process kept issuing tokens for a revoked key');
      expectProblem(await app2.inject({ url: '/v2/test-protected', headers: { authorization: `Bearer ${token2}` } }), 401);
    } finally {
      await app2.close();
      if (db2 !== t.testDb.db) await db2.close();
    }
  });
});
