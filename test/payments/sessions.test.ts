// Client sessions: creation, reading, the move to SUBMITTED with a payment, abort rules,
// expiry, tenant isolation and the widget credential.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2030' });

describe('client sessions', () => {
  let t: TestApp;
  let m: Merchant;
  const create = async (extra: Record<string, unknown> = {}) => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 2500, currency: 'EUR', shopper_redirection_url: 'https://shop.example/return', ...extra } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const payFor = (s: { id: string }, number?: string, amount = 2500) =>
    t.app.inject({ method: 'POST', url: '/v2/payments', headers: m.auth, payload: { amount, currency: 'EUR', client_session_id: s.id, split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: card(number) }] } });
  const abort = (id: string, who = m, status = 'ABORTED_BY_MERCHANT') =>
    t.app.inject({ method: 'POST', url: `/v2/client-sessions/${id}/abort`, headers: who.auth, payload: { status } });

  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant();
  });
  after(() => t.close());

  it('creates a session with every field, a self link and (HOSTED_PAGE) its hosted page link', async () => {
    const s = await create({ order: { reference: 'o-9' }, integration_mode: 'HOSTED_PAGE' });
    assert.equal(s.status, 'CREATED');
    assert.equal(s.entity_id, m.entityId);
    assert.equal(s.capture_mode, 'MANUAL');
    assert.equal(s.integration_mode, 'HOSTED_PAGE');
    assert.equal(s.allow_future_usage, false);
    assert.equal(s.order.reference, 'o-9');
    const ttl = new Date(s.expires_at).getTime() - Date.now();
    assert.ok(ttl > 29 * 60_000 && ttl <= 30 * 60_000, `ttl ${ttl}`);
    assert.equal(typeof s.widget.data, 'string');
    assert.equal(s.widget.js_url, 'http://payd.test/checkout/widget.js');
    assert.ok(s.eligible_solutions.some((x: { partner: string; method: string }) => x.partner === 'card-sim' && x.method === 'CARD'));
    assert.ok(s.eligible_solutions.every((x: { method: string }) => !x.method.startsWith('INSTALLMENTS')), 'BNPL starts at 50.00');
    assert.deepEqual(Object.keys(s.links), ['self', 'hosted_page', 'abort']);
    assert.equal(s.links.hosted_page.href, `http://payd.test/checkout/pay#session=${s.widget.data}`);
    assert.equal(t.app.services.clientSessions.verifyWidgetData(s.widget.data), s.id);
    const tampered = Buffer.from(Buffer.from(s.widget.data, 'base64url').toString().replace(/.$/, 'x')).toString('base64url');
    assert.equal(t.app.services.clientSessions.verifyWidgetData(tampered), undefined);
    const got = await t.app.inject({ url: `/v2/client-sessions/${s.id}`, headers: m.auth });
    assert.deepEqual(got.json(), s);
  });

  it('becomes SUBMITTED with its payment, which gives it the payment link; abort is refused, so no abort link', async () => {
    const s = await create();
    const p = await payFor(s);
    assert.equal(p.statusCode, 200, p.body);
    assert.equal(p.json().client_session_id, s.id);
    const got = (await t.app.inject({ url: `/v2/client-sessions/${s.id}`, headers: m.auth })).json();
    assert.equal(got.status, 'SUBMITTED');
    assert.equal(got.payment_id, p.json().id);
    assert.equal(got.links.payment.href, `http://payd.test/v2/payments/${p.json().id}`);
    assert.equal(got.links.abort, undefined);
    assert.equal(expectProblem(await abort(s.id), 400).type, 'urn:eu.service:client-session-status');
    expectProblem(await payFor(s), 400);
  });

  it('aborts a CREATED session, idempotently, and refuses payments on it', async () => {
    const s = await create();
    const a = await abort(s.id);
    assert.equal(a.json().status, 'ABORTED_BY_MERCHANT');
    assert.equal((await abort(s.id)).json().status, 'ABORTED_BY_MERCHANT');
    expectProblem(await payFor(s), 400);
    expectProblem(await abort(s.id, m, 'CREATED'), 400);
  });

  it('lets a session whose payment was refused be aborted', async () => {
    const s = await create();
    assert.equal((await payFor(s, '4000000000000002')).json().authorization.status, 'REFUSED');
    assert.equal((await abort(s.id)).json().status, 'ABORTED_BY_MERCHANT');
  });

  it('expires', async () => {
    const s = await create({ expires_at: new Date(Date.now() + 1200).toISOString() });
    await new Promise((r) => setTimeout(r, 1400));
    assert.equal((await t.app.inject({ url: `/v2/client-sessions/${s.id}`, headers: m.auth })).json().status, 'EXPIRED');
    expectProblem(await abort(s.id), 400);
    expectProblem(await payFor(s), 400);
  });

  it('refuses a payment that does not match the session', async () => {
    const s = await create();
    const p = expectProblem(await payFor(s, undefined, 2600), 400);
    assert.equal(p.invalid_params?.[0]?.name, 'client_session_id');
  });

  it('hides sessions of other entities', async () => {
    const s = await create();
    const other = await t.createMerchant('other');
    const res = await t.app.inject({ url: `/v2/client-sessions/${s.id}`, headers: other.auth });
    assert.equal(res.statusCode, 404);
    assert.equal(res.body, '');
    assert.equal((await abort(s.id, other)).statusCode, 404);
    const pay = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: other.auth, payload: { amount: 2500, currency: 'EUR', client_session_id: s.id, split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card() }] } });
    assert.equal(pay.statusCode, 404, 'the spec\'s 404 with no body, as for any other resource of another entity');
    assert.equal(pay.body, '');
  });

  it('refuses bad session bodies naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ expires_at: new Date(Date.now() - 1000).toISOString() }, 'expires_at'],
      [{ expires_at: new Date(Date.now() + 25 * 3600_000).toISOString() }, 'expires_at'],
      [{ shopper_redirection_url: 'javascript:alert(1)' }, 'shopper_redirection_url'],
      [{ amount: '2500' }, 'amount'],
      [{ capture_mode: 'LATER' }, 'capture_mode'],
      [{ order: { reference: 5 } }, 'order.reference'],
    ];
    for (const [extra, field] of cases) {
      const res = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 2500, currency: 'EUR', ...extra } });
      const p = expectProblem(res, 400);
      assert.ok(p.invalid_params?.some((x) => x.name === field), res.body);
    }
  });
});
