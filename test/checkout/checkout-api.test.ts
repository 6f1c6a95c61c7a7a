// The shopper's side through the real app: widget.js, the session credential API, the
// 3-D Secure page, the return to the merchant with a token the merchant verifies, and
// the refusals (tampered credential, replayed submit, ineligible split, expired session).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { loggerOptions, redactUrl } from '../../src/platform/observability/logger.ts';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { createTestApp, expectProblem, type Merchant, type TestApp, returnPath } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';

const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123', holder_name: 'Ada Shopper' });

describe('checkout through the session credential', () => {
  const clock = new TestClock();
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp({}, { clock: clock.now });
    m = await t.createMerchant('Checkout shop');
  });
  after(() => t.close());

  const newSession = async (extra: Record<string, unknown> = {}) => {
    const res = await t.app.inject({
      method: 'POST', url: '/v2/client-sessions', headers: m.auth,
      payload: { amount: 2500, currency: 'EUR', shopper_redirection_url: 'https://shop.example/return?order=42', order: { reference: 'o-42' }, ...extra },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const describeSession = (data: string) => t.app.inject({ url: '/checkout/v1/session', headers: { 'x-payd-session': data } });
  const submit = (data: string, split: unknown[]) =>
    t.app.inject({ method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': data }, payload: { split } });
  const verifyReturn = async (location: string) => {
    const url = new URL(location);
    assert.equal(url.origin + url.pathname, 'https://shop.example/return');
    assert.equal(url.searchParams.get('order'), '42', 'the merchant query string is kept');
    const jwks = await t.app.inject({ url: '/v2/signing-jwks', headers: { 'x-api-key': m.apiKey } });
    const { payload } = await jwtVerify(url.searchParams.get('service-redirection-data')!, createLocalJWKSet(jwks.json()), {
      issuer: 'http://payd.test', audience: m.entityId, algorithms: ['RS256'],
    });
    return payload;
  };

  it('serves widget.js as a script anyone may load', async () => {
    const res = await t.app.inject({ url: '/checkout/widget.js' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /javascript/);
    assert.equal(res.headers['access-control-allow-origin'], '*');
    assert.match(res.body, /PaydCheckout/);
    const again = await t.app.inject({ url: '/checkout/widget.js', headers: { 'if-none-match': String(res.headers.etag) } });
    assert.equal(again.statusCode, 304);
  });

  it('describes the session to the widget; refuses a missing or tampered credential', async () => {
    const s = await newSession();
    const res = await describeSession(s.widget.data);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.client_session_id, s.id);
    assert.equal(body.status, 'CREATED');
    assert.ok(body.eligible_solutions.some((e: any) => e.method === 'CARD'));
    expectProblem(await t.app.inject({ url: '/checkout/v1/session' }), 401);
    const raw = Buffer.from(s.widget.data, 'base64url').toString();
    const tampered = Buffer.from(raw.slice(0, -2) + (raw.endsWith('A') ? 'BB' : 'AA')).toString('base64url');
    expectProblem(await describeSession(tampered), 401);
    const otherId = Buffer.from(`00000000-0000-4000-8000-000000000000.${raw.split('.')[1]}`).toString('base64url');
    expectProblem(await describeSession(otherId), 401);
  });

  it('pays by card, moves the session to SUBMITTED, refuses a replayed submit, and returns with a verifiable token', async () => {
    const s = await newSession();
    const res = await submit(s.widget.data, [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card('4242424242424242') }]);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().authorization_status, 'AUTHORIZED');
    const session = (await t.app.inject({ url: `/v2/client-sessions/${s.id}`, headers: m.auth })).json();
    assert.equal(session.status, 'SUBMITTED');
    assert.equal(session.payment_id, res.json().payment_id);
    const replay = await submit(s.widget.data, [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card('4242424242424242') }]);
    expectProblem(replay, 400);
    const { rows } = await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments WHERE client_session_id = $1', [s.id]);
    assert.equal(rows[0]!.n, 1, 'one payment');
    const back = await t.app.inject({ url: returnPath(s.id) });
    assert.equal(back.statusCode, 303);
    const claims = await verifyReturn(String(back.headers.location));
    assert.equal(claims.client_session_id, s.id);
    assert.equal(claims.payment_id, res.json().payment_id);
    assert.equal(claims.authorization_status, 'AUTHORIZED');
    assert.equal(claims.client_session_status, 'SUBMITTED');
  });

  it('runs a 3-D Secure challenge on payd\'s page and comes back AUTHORIZED', async () => {
    const s = await newSession();
    const res = await submit(s.widget.data, [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card('4000000000003220') }]);
    assert.equal(res.json().authorization_status, 'PENDING', res.body);
    const acsUrl = new URL(res.json().redirection.url);
    const page = await t.app.inject({ url: acsUrl.pathname });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
    assert.match(page.body, /Approve the payment/);
    const done = await t.app.inject({ method: 'POST', url: acsUrl.pathname, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'result=pass' });
    assert.equal(done.statusCode, 200);
    const next = /http-equiv="refresh" content="0;url=([^"]+)"/.exec(done.body)?.[1];
    assert.ok(next, done.body);
    // At the top of the window (the browser says so: Sec-Fetch-Dest), a redirect onward.
    const afterAcs = await t.app.inject({ url: new URL(next).pathname + new URL(next).search, headers: { 'sec-fetch-dest': 'document' } });
    assert.equal(afterAcs.statusCode, 303);
    assert.equal(new URL(String(afterAcs.headers.location), 'http://payd.invalid').pathname + new URL(String(afterAcs.headers.location), 'http://payd.invalid').search, returnPath(s.id));
    const back = await t.app.inject({ url: returnPath(s.id) });
    const claims = await verifyReturn(String(back.headers.location));
    assert.equal(claims.authorization_status, 'AUTHORIZED');
    // Back (or a reload) after the challenge: the page says it is over and leads onward (issue 20, item 5).
    const second = await t.app.inject({ url: acsUrl.pathname });
    assert.equal(second.statusCode, 200);
    assert.match(second.body, /already finished/);
    assert.match(second.body, new RegExp(`href="${next.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`));
  });

  it('ends a 3-D Secure challenge in the widget\'s modal frame with a page that tells the widget, and nothing more (issue 42, item 6)', async () => {
    const s = await newSession();
    const res = await submit(s.widget.data, [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card('4000000000003220') }]);
    const acsUrl = new URL(res.json().redirection.url);
    // The bank's page is shown in a frame of the merchant's page.
    const acs = await t.app.inject({ url: acsUrl.pathname });
    assert.match(String(acs.headers['content-security-policy']), /frame-ancestors \*/);
    assert.equal(acs.headers['x-frame-options'], undefined);
    const done = await t.app.inject({ method: 'POST', url: acsUrl.pathname, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'result=fail' });
    assert.match(String(done.headers['content-security-policy']), /frame-ancestors \*/);
    const next = new URL(/http-equiv="refresh" content="0;url=([^"]+)"/.exec(done.body)![1]!);
    const inFrame = await t.app.inject({ url: next.pathname + next.search, headers: { 'sec-fetch-dest': 'iframe' } });
    assert.equal(inFrame.statusCode, 200);
    assert.match(inFrame.body, /<script src="\/checkout\/3ds-done.js" data-next="[^"]+"><\/script>/);
    assert.match(String(inFrame.headers['content-security-policy']), /frame-ancestors \*/);
    assert.equal(inFrame.headers['x-frame-options'], undefined);
    assert.equal(inFrame.headers['cache-control'], 'no-store');
    // The script posts no data: the widget asks payd, which says the attempt was refused and another card may be tried.
    const script = await t.app.inject({ url: '/checkout/3ds-done.js' });
    assert.match(script.body, /postMessage\(\{ type: "payd:3ds-done" \}, '\*'\)/);
    const info = (await describeSession(s.widget.data)).json();
    assert.equal(info.last_attempt_status, 'REFUSED');
    assert.equal(info.can_pay, true);
    // A browser that does not say where the page goes: the page decides (in a frame, tells; at the top, goes on).
    const unsaid = await t.app.inject({ url: next.pathname + next.search });
    assert.equal(unsaid.statusCode, 200);
    assert.ok(unsaid.body.includes(`href="http://payd.test${returnPath(s.id)}"`), unsaid.body);
    // Still only with the MAC.
    assert.equal((await t.app.inject({ url: next.pathname, headers: { 'sec-fetch-dest': 'iframe' } })).statusCode, 404);
  });

  it('serves the card frame: any page may embed it, it runs only payd\'s script, and the widget stays small', async () => {
    const page = await t.app.inject({ url: '/checkout/card-frame' });
    assert.equal(page.statusCode, 200);
    const csp = String(page.headers['content-security-policy']);
    assert.match(csp, /frame-ancestors \*/);
    assert.match(csp, /script-src 'sha256-[\w+/]+=*';/, 'its own script, by hash');
    assert.doesNotMatch(csp, /unsafe-inline/);
    assert.match(csp, /connect-src 'self'/);
    assert.match(csp, /form-action 'none'/);
    assert.equal(page.headers['x-frame-options'], undefined);
    assert.match(page.body, /<script>(?:(?!<\/script>)[\s\S])*cc-number[\s\S]*?<\/script>/, 'its script in its document');
    assert.doesNotMatch(page.body, /<script src/, 'no other script');
    const js = await t.app.inject({ url: '/checkout/card-frame.js' });
    assert.equal(js.statusCode, 200);
    assert.match(String(js.headers['content-type']), /javascript/);
    assert.match(js.body, /autocomplete|cc-number/);
    assert.equal((await t.app.inject({ url: '/checkout/card-frame.css' })).statusCode, 200);
    // What a merchant page downloads: widget.js under 25 KB gzipped (the card frame's script is loaded by the frame).
    const widgetJs = await t.app.inject({ url: '/checkout/widget.js' });
    const size = gzipSync(widgetJs.rawPayload).length;
    assert.ok(size < 25 * 1024, `widget.js is ${size} bytes gzipped`);
    // The hosted page may frame the card frame (same origin), nothing else.
    const hosted = await newSession({ integration_mode: 'HOSTED_PAGE' });
    const hostedPage = await t.app.inject({ url: new URL(hosted.links.hosted_page.href).pathname });
    assert.match(String(hostedPage.headers['content-security-policy']), /frame-src 'self'/);
    assert.match(String(hostedPage.headers['content-security-policy']), /frame-ancestors 'none'/);
  });

  it('refuses a split outside the eligible solutions, a session of a HOSTED page past expiry, and bad bodies, changing nothing', async () => {
    const s = await newSession();
    expectProblem(await submit(s.widget.data, [{ partner: 'nope-sim', method: 'CARD', amount: 2500, instrument: card('4242424242424242') }]), 400);
    expectProblem(await submit(s.widget.data, [{ partner: 'card-sim', method: 'CARD', amount: '2500', instrument: card('4242424242424242') }]), 400);
    expectProblem(await submit(s.widget.data, [{ partner: 'card-sim', method: 'CARD', amount: 2400, instrument: card('4242424242424242') }]), 400);
    expectProblem(await submit(s.widget.data, [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card('4242424242424241') }]), 400);
    const still = (await t.app.inject({ url: `/v2/client-sessions/${s.id}`, headers: m.auth })).json();
    assert.equal(still.status, 'CREATED');
    assert.equal(still.payment_id, undefined);

    const expiring = await newSession({ expires_at: new Date(clock.now() + 60_000).toISOString() });
    assert.equal((await describeSession(expiring.widget.data)).json().status, 'CREATED', 'not before its time');
    clock.advance(60_001);
    const late = await submit(expiring.widget.data, [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card('4242424242424242') }]);
    assert.match(String(expectProblem(late, 400).detail), /expired/);
  });

  it('refuses a payment of another entity\'s session, which stays untouched', async () => {
    const s = await newSession();
    const other = await t.createMerchant('Another shop');
    const res = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: other.auth,
      payload: { amount: 2500, currency: 'EUR', client_session_id: s.id, split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card('4242424242424242') }] },
    });
    assert.equal(res.statusCode, 404, 'the spec\'s 404 with no body: the session is as unknown as a missing one');
    assert.equal(res.body, '');
    const hidden = await t.app.inject({ url: `/v2/client-sessions/${s.id}`, headers: other.auth });
    assert.equal(hidden.statusCode, 404);
    assert.equal(hidden.body, '', 'no body, as the spec says');
    const still = (await t.app.inject({ url: `/v2/client-sessions/${s.id}`, headers: m.auth })).json();
    assert.equal(still.status, 'CREATED');
    assert.equal(still.payment_id, undefined);
  });

  it('gives HOSTED_PAGE sessions a hosted page that mounts the widget under a strict CSP', async () => {
    const s = await newSession({ integration_mode: 'HOSTED_PAGE' });
    const href = s.links.hosted_page?.href as string;
    // The credential is in the fragment: a browser sends only /checkout/pay.
    assert.equal(href, `http://payd.test/checkout/pay#session=${s.widget.data}`, JSON.stringify(s.links));
    const sent = new URL(href);
    const page = await t.app.inject({ url: `${sent.pathname}${sent.search}` });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /data-payd-session-from="fragment"/);
    assert.doesNotMatch(page.body, new RegExp(s.widget.data), 'the page does not carry the credential');
    assert.match(String(page.headers['content-security-policy']), /script-src 'self'/);
    assert.equal(page.headers['referrer-policy'], 'no-referrer');
    assert.doesNotMatch(page.body, /<script>(?!<)/, 'no inline script');
  });

  it('moves the credential of an old ?session= address to the fragment, and keeps it out of the request log', async () => {
    const s = await newSession({ integration_mode: 'HOSTED_PAGE' });
    const old = await t.app.inject({ url: `/checkout/pay?session=${encodeURIComponent(s.widget.data)}` });
    assert.equal(old.statusCode, 303);
    assert.equal(old.headers.location, `/checkout/pay#session=${encodeURIComponent(s.widget.data)}`);
    assert.equal(old.headers['cache-control'], 'no-store');
    // What payd's request log writes for that URL (Fastify's request serializer, as configured).
    const logged = JSON.stringify((loggerOptions('info').serializers!.req as (r: unknown) => unknown)({
      method: 'GET', url: `/checkout/pay?x=1&session=${s.widget.data}&y=2`, headers: {}, host: 'payd.test', ip: '127.0.0.1',
    }));
    assert.doesNotMatch(logged, new RegExp(s.widget.data.slice(0, 20)));
    assert.match(logged, /"url":"\/checkout\/pay\?x=1&session=\[redacted\]&y=2"/);
    assert.equal(redactUrl('/checkout/pay?SESSION=abc'), '/checkout/pay?SESSION=[redacted]');
    assert.equal(redactUrl('/checkout/pay?sess%69on=abc'), '/checkout/pay?sess%69on=[redacted]');
    assert.equal(redactUrl('/v2/payments?limit=2'), '/v2/payments?limit=2');
  });
});
