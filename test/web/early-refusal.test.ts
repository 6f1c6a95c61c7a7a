// A request refused before its cookies are parsed (@fastify/cookie parses them in
// onRequest; a bad header or body fails earlier) still gets its problem+json in the
// shopper's language: reading a cookie of such a request is "no cookie", not a crash of
// the error handler (which answered Fastify's bare JSON with "Cannot read properties of
// null (reading 'payd_lang')", found by the OpenAPI fuzzer).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../helpers/app.ts';

describe('a request refused before its cookies are read', () => {
  let t: TestApp;
  before(async () => { t = await createTestApp(); });
  after(async () => t?.close());

  it('is answered with problem+json on the checkout API', async () => {
    for (const req of [
      // a query that is not UTF-8 (a lone surrogate): refused while the URL is read
      { method: 'GET' as const, url: '/checkout/v1/session?lang=a%ED%A0%80', headers: { 'x-payd-session': 'nope' } },
      { method: 'POST' as const, url: '/checkout/v1/session/payments?lang=&lang=a%ED%A0%80', headers: { 'content-type': 'application/json' }, payload: '{"split":[]}' },
      { method: 'GET' as const, url: '/checkout/v1/session', headers: { 'x-payd-session': 'nope', 'content-encoding': 'a\u0000b' } },
      // Basic credentials that are not UTF-8, and an empty accept
      { method: 'POST' as const, url: '/checkout/v1/session/payments', headers: { authorization: 'Basic 7aCAOng=', accept: '', 'content-type': 'application/json' }, payload: '{"split":[]}' },
    ]) {
      const res = await t.app.inject(req);
      assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${req.method} ${req.url}: ${res.statusCode} ${res.body}`);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/, `${req.method} ${req.url}: ${res.body}`);
      assert.doesNotMatch(res.body, /Cannot read properties/);
    }
  });
});
