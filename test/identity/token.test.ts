import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type TestApp } from '../helpers/app.ts';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('POST /oauth/token (client credentials)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('issues a payment-api bearer token for a valid API key', async () => {
    const m = await t.createMerchant();
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, 'x-api-key': m.apiKey }, payload: 'grant_type=client_credentials' });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'scope', 'token_type']);
    assert.equal(body.token_type, 'Bearer');
    assert.equal(body.expires_in, 3600);
    assert.equal(body.scope, 'payment-api');
    assert.equal(res.headers['cache-control'], 'no-store');
  });

  it('refuses an unknown API key with 401 invalid_client', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, 'x-api-key': 'payd_sk_' + 'a'.repeat(43) }, payload: 'grant_type=client_credentials' });
    const p = expectProblem(res, 401);
    assert.equal(p.error, 'invalid_client');
    assert.ok(res.headers['www-authenticate']);
  });

  it('refuses a request without any credentials with 401 invalid_client and a challenge naming both schemes', async () => {
    // decisions.md (Token errors): "401 invalid_client (missing, unknown or revoked key, with WWW-Authenticate)".
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: FORM, payload: 'grant_type=client_credentials' });
    const p = expectProblem(res, 401);
    assert.equal(p.error, 'invalid_client');
    assert.equal(res.headers['www-authenticate'], 'ApiKey realm="payd", header="x-api-key", Basic realm="payd"');
    assert.equal(res.headers['cache-control'], 'no-store');
  });

  it('refuses an unsupported grant type', async () => {
    const m = await t.createMerchant();
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { ...FORM, 'x-api-key': m.apiKey }, payload: 'grant_type=password' });
    assert.equal(expectProblem(res, 400).error, 'unsupported_grant_type');
  });
});
