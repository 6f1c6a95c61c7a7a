// Code and documentation agree (issue 15, item 7): each case quotes what the docs promise
// (docs/decisions.md, docs/webhooks.md) and checks the running app does it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';

const card = (number = '4242424242424242') => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const customer = { email: 'shopper@example.com', first_name: 'Ada', last_name: 'Lovelace' };

describe('docs agree with behaviour', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Docs shop');
  });
  after(() => t.close());

  let seq = 0;
  const post = (url: string, payload: unknown) =>
    t.app.inject({ method: 'POST', url, headers: { ...m.auth, 'x-idempotency-key': `docs-${++seq}` }, payload: payload as Record<string, unknown> });
  const ok = async (res: Awaited<ReturnType<typeof post>>) => {
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  /** Amount per method of the operation that `x-created-operation-id` names. */
  const byMethod = (payment: any, kind: 'captures' | 'refunds' | 'voids', opId: string) => {
    const op = payment[kind].find((o: any) => o.id === opId);
    assert.ok(op, `${kind} ${opId} is on the payment`);
    return Object.fromEntries(op.partner_transactions.map((x: any) => [x.method, x.amount]));
  };
  const bnplAndCard = (capture_mode = 'AUTOMATIC') => ({
    amount: 10000, currency: 'EUR', capture_mode, customer,
    split: [
      { partner: 'bnpl-sim', method: 'INSTALLMENTS_3X', amount: 6000 },
      { partner: 'card-sim', method: 'CARD', amount: 4000, instrument: card() },
    ],
  });

  // decisions.md: "captures take gift cards first, refunds take cards first (...), voids
  // release cards first".
  it('refunds take the card first, then the other methods (BNPL); a refund of 7000 is card 4000 + BNPL 3000', async () => {
    const p = await ok(await post('/v2/payments', bnplAndCard()));
    assert.equal(p.authorization.status, 'AUTHORIZED', JSON.stringify(p.authorization));
    assert.equal(p.amounts.total_captured, 10000);
    const res = await post(`/v2/payments/${p.id}/refunds`, { amount: 7000 });
    const after = await ok(res);
    assert.deepEqual(byMethod(after, 'refunds', String(res.headers['x-created-operation-id'])), { CARD: 4000, INSTALLMENTS_3X: 3000 });
  });

  it('voids release the card first; captures take BNPL (other methods) before the card', async () => {
    const p = await ok(await post('/v2/payments', bnplAndCard('MANUAL')));
    const v = await post(`/v2/payments/${p.id}/voids`, { amount: 5000 });
    assert.deepEqual(byMethod(await ok(v), 'voids', String(v.headers['x-created-operation-id'])), { CARD: 4000, INSTALLMENTS_3X: 1000 });
    const q = await ok(await post('/v2/payments', bnplAndCard('MANUAL')));
    const c = await post(`/v2/payments/${q.id}/captures`, { amount: 7000 });
    assert.deepEqual(byMethod(await ok(c), 'captures', String(c.headers['x-created-operation-id'])), { INSTALLMENTS_3X: 6000, CARD: 1000 });
  });

  it('refunds take gift cards last: gift card + card, refund 5000 is all card', async () => {
    const p = await ok(await post('/v2/payments', {
      amount: 9000, currency: 'EUR', capture_mode: 'AUTOMATIC',
      split: [
        { partner: 'gift-sim', method: 'GIFT_CARD', amount: 3000, instrument: { type: 'GIFT_CARD', number: '6036280000007777' } },
        { partner: 'card-sim', method: 'CARD', amount: 6000, instrument: card() },
      ],
    }));
    assert.equal(p.authorization.status, 'AUTHORIZED', JSON.stringify(p.authorization));
    const r = await post(`/v2/payments/${p.id}/refunds`, { amount: 5000 });
    assert.deepEqual(byMethod(await ok(r), 'refunds', String(r.headers['x-created-operation-id'])), { CARD: 5000 });
  });

  // Spec: save_token "seen on authorization transactions of some payments", token_saved
  // "seen with save_token". decisions.md: allow_future_usage keeps the card on file.
  it('token_saved is true when the card was kept on file, false when the authorization failed', async () => {
    const saved = await ok(await post('/v2/payments', {
      amount: 1000, currency: 'EUR', allow_future_usage: true,
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card() }],
    }));
    const auth = saved.authorization.partner_transactions[0];
    assert.equal(auth.save_token, true);
    assert.equal(auth.token_saved, true);

    const explicit = await ok(await post('/v2/payments', {
      amount: 1000, currency: 'EUR',
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card(), save_token: true }],
    }));
    assert.equal(explicit.authorization.partner_transactions[0].token_saved, true);

    const declined = await ok(await post('/v2/payments', {
      amount: 1000, currency: 'EUR', allow_future_usage: true,
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card('4000000000000002') }],
    }));
    assert.equal(declined.authorization.status, 'REFUSED');
    assert.equal(declined.authorization.partner_transactions[0].save_token, true);
    assert.equal(declined.authorization.partner_transactions[0].token_saved, false);

    const optOut = await ok(await post('/v2/payments', {
      amount: 1000, currency: 'EUR', allow_future_usage: true,
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: card(), save_token: false }],
    }));
    assert.equal(optOut.authorization.partner_transactions[0].save_token, false);
    assert.equal(optOut.authorization.partner_transactions[0].token_saved, undefined);
  });

  // decisions.md: "capture_mode (MANUAL default, or AUTOMATIC: the payment made with the
  // session takes it, and a payment body whose capture_mode contradicts it is 400)".
  it('a client session with capture_mode AUTOMATIC gives an automatically captured payment; a contradicting body is 400', async () => {
    const s = await ok(await t.app.inject({
      method: 'POST', url: '/v2/client-sessions', headers: m.auth,
      payload: { amount: 2500, currency: 'EUR', capture_mode: 'AUTOMATIC', shopper_redirection_url: 'https://shop.example/back' },
    }));
    assert.equal(s.capture_mode, 'AUTOMATIC');
    const bad = expectProblem(await post('/v2/payments', {
      amount: 2500, currency: 'EUR', capture_mode: 'MANUAL', client_session_id: s.id,
      split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card() }],
    }), 400);
    assert.ok(bad.invalid_params?.some((x) => x.name === 'capture_mode'), JSON.stringify(bad));
    const p = await ok(await post('/v2/payments', {
      amount: 2500, currency: 'EUR', client_session_id: s.id,
      split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card() }],
    }));
    assert.equal(p.capture_mode, 'AUTOMATIC');
    assert.equal(p.amounts.total_captured, 2500);
  });

  // decisions.md: "401 invalid_client (missing, unknown or revoked key, with WWW-Authenticate)".
  it('a token request without an API key is 401 invalid_client with WWW-Authenticate', async () => {
    const res = await t.app.inject({
      method: 'POST', url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'grant_type=client_credentials',
    });
    assert.equal(res.statusCode, 401, res.body);
    assert.ok(res.headers['www-authenticate'], `WWW-Authenticate is set: ${JSON.stringify(res.headers)}`);
    assert.equal(res.json().error, 'invalid_client');
  });
});
