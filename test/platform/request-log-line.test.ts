// One log line per request at the default level (docs/decisions.md, "One log line per
// request"): written once the answer has gone, with the request, the status and the time;
// no line when the request arrives.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type TestApp } from '../helpers/app.ts';

describe('the request log line', () => {
  let t: TestApp;
  const lines: Array<Record<string, any>> = [];
  before(async () => {
    t = await createTestApp({ logLevel: 'info' }, { logStream: { write: (line: string) => void lines.push(JSON.parse(line)) } });
  });
  after(() => t.close());

  it('a request writes one line, at its end: method, URL, status, time', async () => {
    const m = await t.createMerchant('Logged');
    const res = await t.app.inject({ url: '/v2/payments?limit=2', headers: m.auth });
    assert.equal(res.statusCode, 200, res.body);
    const ofRequest = lines.filter((l) => l.reqId === res.headers['x-request-id']);
    assert.equal(ofRequest.length, 1, JSON.stringify(ofRequest));
    const [line] = ofRequest;
    assert.equal(line!.msg, 'request completed');
    assert.equal(line!.level, 30);
    assert.equal(line!.req.method, 'GET');
    assert.match(line!.req.url, /^\/v2\/payments\?limit=2/);
    assert.equal(line!.res.statusCode, 200);
    assert.equal(typeof line!.responseTime, 'number');
  });

  it('a refused request writes its line too, with its status and no credential of its URL', async () => {
    const res = await t.app.inject({ url: '/v2/payments?access_token=secret-in-the-url' });
    assert.ok(res.statusCode >= 400 && res.statusCode < 500, res.body);
    const ofRequest = lines.filter((l) => l.reqId === res.headers['x-request-id']);
    assert.deepEqual(ofRequest.map((l) => [l.msg, l.res?.statusCode]), [['request completed', res.statusCode]]);
    assert.ok(!JSON.stringify(ofRequest).includes('secret-in-the-url'), 'a credential in the URL is redacted');
  });
});
