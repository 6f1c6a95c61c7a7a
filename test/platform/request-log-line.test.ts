// One log line per request at the default level (docs/decisions.md, "One log line per
// request"): written once the answer has gone, with the request, the status and the time;
// no line when the request arrives.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { REDACT_PATHS, loggerOptions, requestChild, writeUnredacted } from '../../src/platform/observability/logger.ts';

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

  it('the line is written without the redaction pass, and carries no credential of the request', async () => {
    const m = await t.createMerchant('Logged with secrets');
    const apiKey = m.apiKey;
    const res = await t.app.inject({
      method: 'POST', url: '/oauth/token?access_token=secret-in-the-query',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/x-www-form-urlencoded', cookie: 'sid=secret-in-a-cookie', 'accept-version': '2' },
      payload: 'grant_type=client_credentials&client_secret=secret-in-the-body',
    });
    assert.equal(res.statusCode, 200, res.body);
    const ofRequest = lines.filter((l) => l.reqId === res.headers['x-request-id']);
    assert.equal(ofRequest.length, 1, JSON.stringify(ofRequest));
    const text = JSON.stringify(ofRequest);
    for (const secret of [apiKey, 'secret-in-the-query', 'secret-in-a-cookie', 'secret-in-the-body', res.json().access_token]) {
      assert.ok(!text.includes(secret), `${secret} is not in the line`);
    }
    assert.deepEqual(Object.keys(ofRequest[0]!), ['level', 'time', 'service', 'reqId', 'req', 'res', 'responseTime', 'msg']);
    // (The serializer's fields; injected requests have no remote port.)
    for (const k of Object.keys(ofRequest[0]!.req)) assert.ok(['method', 'url', 'version', 'host', 'remoteAddress', 'remotePort'].includes(k), k);
  });

  it('writeUnredacted: the same line as the redacting logger writes, which still redacts', () => {
    const written: string[] = [];
    const root = pino({ ...loggerOptions('info'), timestamp: false }, { write: (line: string) => void written.push(line) });
    const child = root.child({ reqId: 'r-1' });
    const line = { req: { method: 'POST', url: '/oauth/token?token=abc', headers: { 'x-api-key': 'k' }, ip: '127.0.0.1' }, res: { statusCode: 200 }, responseTime: 1.5 };
    child.info(line, 'request completed');
    writeUnredacted(child, line, 'request completed');
    assert.equal(written.length, 2);
    assert.equal(written[1], written[0], 'byte for byte the line the redacting logger writes');
    assert.match(written[0]!, /"reqId":"r-1".*"url":"\/oauth\/token\?token=\[redacted\]"/);
    child.info({ body: { api_key: 'secret-key' } }, 'other line');
    assert.match(written[2]!, /"api_key":"\[redacted\]"/, 'the logger itself still redacts');
    assert.ok(!written.join('').includes('secret-key'));
  });

  it('requestChild: the same bindings as pino writes; the child and its parent still redact; other bindings keep the pass', () => {
    const written: string[] = [];
    const root = pino({ ...loggerOptions('info'), timestamp: false }, { write: (line: string) => void written.push(line) });
    const bindings = { reqId: 'r-"2"', trace_id: 'abc', span_id: 'def' };
    root.child(bindings, {}).info('x');
    requestChild(root, bindings, {}).info('x');
    assert.equal(written[1], written[0], 'byte for byte the bindings pino writes');
    const child = requestChild(root, { reqId: 'r-3' });
    child.info({ headers: { authorization: 'Bearer secret-1' } }, 'y');
    root.info({ body: { password: 'secret-2' } }, 'z');
    // A binding the pass could redact (an object) keeps it.
    requestChild(root, { reqId: 'r-4', user: { password: 'secret-3' } }).info('w');
    const text = written.join('');
    for (const secret of ['secret-1', 'secret-2', 'secret-3']) assert.ok(!text.includes(secret), secret);
    assert.match(written[2]!, /"reqId":"r-3".*"authorization":"\[redacted\]"/);
    // What lets a request's ids skip the pass: no redaction path is a top-level name.
    for (const path of REDACT_PATHS) assert.ok(/[.[]/.test(path), path);
  });

  it('the time of a line is ISO 8601 with milliseconds, as pino writes it', () => {
    const written: string[] = [];
    const log = pino(loggerOptions('info'), { write: (line: string) => void written.push(line) });
    for (let i = 0; i < 50; i++) {
      const before = Date.now();
      log.info('t');
      const after = Date.now();
      const time = JSON.parse(written[i]!).time as string;
      assert.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const at = Date.parse(time);
      assert.ok(at >= before && at <= after, `${time} within [${before}, ${after}]`);
    }
  });
});
