// The merchant's own webhook endpoint through the payment API (issue 43 item 1): with the
// access token of its API key a merchant's server sets, reads, removes its endpoint and
// rotates its signing secret; the secret is shown once; each merchant reaches only its
// own; bad input is a 400 naming the field; deliveries go to the endpoint it set, signed
// with the secret it was shown.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createTestApp, expectProblem, type Merchant, type TestApp } from '../helpers/app.ts';
import { FAST, type Received, type Receiver, startReceiver, waitFor } from './helpers.ts';

describe('webhooks: the merchant\'s endpoint through the payment API', () => {
  let t: TestApp;
  let m: Merchant;
  let other: Merchant;
  let rx: Receiver;
  let url = '';

  before(async () => {
    t = await createTestApp(FAST);
    m = await t.createMerchant('Hooks shop');
    other = await t.createMerchant('Other shop');
    rx = await startReceiver();
    t.app.webhooks.dispatcher.start((err) => console.error(err));
    url = `${rx.url}/hooks`;
  });
  after(async () => {
    await t?.close();
    await rx?.close();
  });

  const call = (merchant: Merchant, method: 'GET' | 'PUT' | 'DELETE' | 'POST', path: string, payload?: object) =>
    t.app.inject({ method, url: path, headers: merchant.auth, ...(payload ? { payload } : {}) });

  it('sets, reads, rotates and removes it; the secret is shown once; another merchant sees none of it', async () => {
    expectProblem(await call(m, 'GET', '/v2/webhook-endpoint'), 404);
    const bad = expectProblem(await call(m, 'PUT', '/v2/webhook-endpoint', { url: 'ftp://example.com/hooks' }), 400);
    assert.ok(bad.invalid_params?.some((p) => p.name === 'url'), JSON.stringify(bad));

    const set = await call(m, 'PUT', '/v2/webhook-endpoint', { url, headers: [{ name: 'x-shop-key', values: ['sesame-1234'] }] });
    assert.equal(set.statusCode, 200, set.body);
    const secret = set.json().secret as string;
    assert.match(secret, /^whsec_/);
    assert.equal(set.json().entity_id, m.entityId);
    const again = await call(m, 'PUT', '/v2/webhook-endpoint', { url, headers: [{ name: 'x-shop-key', values: ['sesame-1234'] }] });
    assert.equal(again.json().secret, undefined, 'shown once');
    const read = (await call(m, 'GET', '/v2/webhook-endpoint')).json();
    assert.equal(read.url, url);
    assert.notEqual(read.headers[0].values[0], 'sesame-1234', 'header values are masked');

    // Tenant isolation: the other merchant has no endpoint, and cannot remove this one.
    expectProblem(await call(other, 'GET', '/v2/webhook-endpoint'), 404);
    expectProblem(await call(other, 'DELETE', '/v2/webhook-endpoint'), 404);
    // The operator token is not a merchant credential.
    assert.equal((await t.app.inject({ url: '/v2/webhook-endpoint', headers: t.adminHeaders })).statusCode, 401);

    // A payment: its event goes to the endpoint, signed with the secret shown.
    const pay = await t.app.inject({ method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'x-idempotency-key': 'hooks-1' }, payload: {
      amount: 1000, currency: 'EUR', split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2040', cvv: '123' } }],
    } });
    assert.equal(pay.statusCode, 200, pay.body);
    const verify = (s: string, r: Received) => {
      const sig = String(r.headers['payd-signature']);
      const ts = /t=(\d+)/.exec(sig)![1]!;
      return [...sig.matchAll(/v1=([0-9a-f]+)/g)].some((x) => x[1] === createHmac('sha256', s).update(`${ts}.${r.body}`).digest('hex'));
    };
    const first = (await waitFor(() => rx.requests[0], 10_000, 'a delivery'))!;
    assert.equal(first.path, '/hooks');
    assert.equal(first.headers['x-shop-key'], 'sesame-1234');
    assert.ok(verify(secret, first), 'signed with the secret shown');

    const rotated = await call(m, 'POST', '/v2/webhook-endpoint/secret/rotate', { previous_secret_valid_seconds: 0 });
    assert.equal(rotated.statusCode, 200, rotated.body);
    assert.equal(rotated.headers['cache-control'], 'no-store');
    assert.notEqual(rotated.json().secret, secret);
    assert.equal(rotated.json().version, 2);
    expectProblem(await call(m, 'POST', '/v2/webhook-endpoint/secret/rotate', { previous_secret_valid_seconds: -1 }), 400);

    assert.equal((await call(m, 'DELETE', '/v2/webhook-endpoint')).statusCode, 204);
    expectProblem(await call(m, 'GET', '/v2/webhook-endpoint'), 404);
  });
});
