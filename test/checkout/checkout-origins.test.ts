// Who may embed the card frame and the 3-D Secure page (issue 42, "a merchant can restrict
// them to its registered origins"): any page by default; the entity's checkout_origins and
// payd's own pages once the merchant registers them through the operator API.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { sessionIdOf } from '../../src/checkout/widget/frame-protocol.ts';

const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123', holder_name: 'Ada Shopper' });
const ancestors = (res: { headers: Record<string, unknown> }) => /frame-ancestors ([^;]+)/.exec(String(res.headers['content-security-policy']))?.[1];

describe('checkout origins: frame-ancestors of the card frame and the 3-D Secure frame', () => {
  let t: TestApp;
  let open: Merchant;
  let strict: Merchant;
  before(async () => {
    t = await createTestApp();
    open = await t.createMerchant('Open shop');
    strict = await t.createMerchant('Strict shop');
  });
  after(() => t.close());

  const newSession = async (m: Merchant) => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 2500, currency: 'EUR', shopper_redirection_url: 'https://shop.example/return' } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const setOrigins = (entityId: string, checkout_origins: unknown) =>
    t.app.inject({ method: 'PATCH', url: `/admin/v1/entities/${entityId}`, headers: t.adminHeaders, payload: { checkout_origins } });

  it('registers origins through the operator API, refusing what is not an origin', async () => {
    assert.deepEqual((await t.app.inject({ url: `/admin/v1/entities/${strict.entityId}`, headers: t.adminHeaders })).json().checkout_origins, []);
    for (const [bad, reason] of [['https://shop.example/pay', /origin only/], ['http://shop.example', /https/], ['shop.example', /origin such as/]] as const) {
      const res = await setOrigins(strict.entityId, [bad]);
      assert.equal(res.statusCode, 400, bad);
      assert.equal(res.json().invalid_params[0].name, 'checkout_origins[0]');
      assert.match(res.json().invalid_params[0].reason, reason);
    }
    const res = await setOrigins(strict.entityId, ['https://shop.example', 'https://www.shop.example:8443/', 'http://localhost:3000']);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().checkout_origins, ['https://shop.example', 'https://www.shop.example:8443', 'http://localhost:3000']);
    assert.equal(res.json().name, 'Strict shop', 'the name is kept');
  });

  it('the card frame of a session of a merchant with origins lists them and payd; others stay embeddable anywhere', async () => {
    const s = await newSession(strict);
    assert.equal(sessionIdOf(s.widget.data), s.id, 'the widget reads the session id from its credential');
    const frame = await t.app.inject({ url: `/checkout/card-frame?s=${s.id}` });
    assert.equal(frame.statusCode, 200);
    assert.equal(ancestors(frame), "'self' https://shop.example https://www.shop.example:8443 http://localhost:3000");
    const other = await newSession(open);
    assert.equal(ancestors(await t.app.inject({ url: `/checkout/card-frame?s=${other.id}` })), '*');
    assert.equal(ancestors(await t.app.inject({ url: '/checkout/card-frame' })), '*', 'a frame for no session (it takes no credential then)');
    assert.equal(ancestors(await t.app.inject({ url: '/checkout/card-frame?s=not-a-session' })), '*');
  });

  it('the 3-D Secure page in the widget\'s frame lists them too', async () => {
    const s = await newSession(strict);
    const res = await t.app.inject({ method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': s.widget.data }, payload: { split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card('4000000000003220') }] } });
    const acsUrl = new URL(res.json().redirection.url);
    const done = await t.app.inject({ method: 'POST', url: acsUrl.pathname, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'result=fail' });
    const next = new URL(/http-equiv="refresh" content="0;url=([^"]+)"/.exec(done.body)![1]!);
    const inFrame = await t.app.inject({ url: next.pathname + next.search, headers: { 'sec-fetch-dest': 'iframe' } });
    assert.equal(inFrame.statusCode, 200);
    assert.equal(ancestors(inFrame), "'self' https://shop.example https://www.shop.example:8443 http://localhost:3000");
  });

  it('an empty list makes the frames embeddable anywhere again', async () => {
    assert.deepEqual((await setOrigins(strict.entityId, [])).json().checkout_origins, []);
    const s = await newSession(strict);
    assert.equal(ancestors(await t.app.inject({ url: `/checkout/card-frame?s=${s.id}` })), '*');
  });
});
