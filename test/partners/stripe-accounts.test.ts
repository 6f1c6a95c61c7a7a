// Stripe accounts per entity (issue 19: "which connectors run with which credentials, per
// entity where it matters"), over real HTTP: payd -> a recording proxy -> stripe-stateful-mock.
//   - entity A is a connected account of a platform (Stripe Connect, Stripe-Account header);
//   - entity B has its own Stripe account (its own secret key and webhook secret);
//   - entity C has none: stripe is not offered to it and a payment naming it is a 400.
// And POST /v1/tokens, which the mock lacks, against the proxy that checks the request
// against Stripe's published schema (test/helpers/stripe-schema-proxy.ts).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { startStripeMock, type StripeMock } from '../helpers/stripe-mock.ts';
import { checkTokenCreate, schemaVersionNote, startStripeSchemaProxy, type StripeSchemaProxy } from '../helpers/stripe-schema-proxy.ts';
import { parsePartners, PartnersConfigError } from '../../src/partners/partners-config.ts';

const PLATFORM_KEY = 'sk_test_platform_key';
const B_KEY = 'sk_test_shop_b_key';
const B_WEBHOOK = 'whsec_shop_b';
const year = String(new Date().getFullYear() + 2);
const card = (number: string) => ({ type: 'CARD', number, expiry_month: '11', expiry_year: year, cvv: '123' });

describe('Stripe accounts per entity (connected account, own account, none)', () => {
  let mock: StripeMock;
  let proxy: StripeSchemaProxy;
  let t: TestApp;
  let a: Merchant;
  let b: Merchant;
  let c: Merchant;
  let acct: string;
  const post = (m: Merchant, url: string, payload: unknown) =>
    t.app.inject({ method: 'POST', url, headers: { ...m.auth, 'idempotency-key': crypto.randomUUID() }, payload: payload as object });
  const stripeGet = async (path: string, account?: string) => {
    const res = await fetch(`${mock.url}${path}`, { headers: { authorization: `Bearer ${PLATFORM_KEY}`, ...(account ? { 'stripe-account': account } : {}) } });
    return { status: res.status, body: await res.json() as Record<string, unknown> };
  };
  const pay = (m: Merchant, number = '4242424242424242', amount = 5000) => post(m, '/v2/payments', {
    amount, currency: 'EUR', capture_mode: 'MANUAL', split: [{ partner: 'stripe', method: 'CARD', amount, instrument: card(number) }],
  });

  before(async () => {
    mock = await startStripeMock();
    proxy = await startStripeSchemaProxy(mock.url);
    const created = await fetch(`${mock.url}/v1/accounts`, {
      method: 'POST', headers: { authorization: `Bearer ${PLATFORM_KEY}`, 'content-type': 'application/x-www-form-urlencoded' }, body: 'type=custom&country=FR',
    });
    acct = ((await created.json()) as { id: string }).id;
    assert.match(acct, /^acct_/);
    // The entities exist first (their ids go in the configuration), then payd runs with it.
    t = await createTestApp();
    [a, b, c] = [await t.createMerchant('Shop A'), await t.createMerchant('Shop B'), await t.createMerchant('Shop C')];
    await t.restart({
      partners: parsePartners(JSON.stringify([
        { name: 'card-sim' }, { name: 'gift-sim' },
        {
          name: 'stripe', api_base: proxy.url, accounts: [
            { entities: [a.entityId], secret_key_env: 'PLATFORM_KEY', stripe_account: acct },
            { entities: [b.entityId], secret_key_env: 'B_KEY', webhook_secret_env: 'B_WEBHOOK' },
          ],
        },
      ]), { PLATFORM_KEY, B_KEY, B_WEBHOOK }),
    });
  });
  after(async () => {
    await t?.close();
    await proxy?.stop();
    await mock?.stop();
  });

  it('offers stripe to the entities it has an account for, and refuses it to the others (400 naming the field)', async () => {
    for (const [m, offered] of [[a, true], [b, true], [c, false]] as const) {
      const res = await post(m, '/v2/eligible-solutions', { amount: 5000, currency: 'EUR' });
      assert.equal(res.statusCode, 200, res.body);
      const names = (res.json().eligible_solutions as { partner: string; method: string }[]).map((s) => `${s.partner}/${s.method}`);
      assert.equal(names.includes('stripe/CARD'), offered, names.join(', '));
      assert.ok(names.includes('card-sim/CARD'));
    }
    const refused = await pay(c);
    assert.equal(refused.statusCode, 400, refused.body);
    const params = refused.json().invalid_params as { name: string; reason: string }[];
    assert.deepEqual(params.map((p) => p.name), ['split[0].partner']);
    assert.match(params[0]!.reason, /not configured for this entity/);
    assert.equal(proxy.requests.length, 0, 'nothing reached Stripe');
  });

  it("a connected account's payment is made, captured and refunded on that account only (Stripe-Account)", async () => {
    const created = await pay(a);
    assert.equal(created.statusCode, 200, created.body);
    const p = created.json();
    assert.equal(p.authorization.status, 'AUTHORIZED', JSON.stringify(p.authorization));
    const chargeId = p.authorization.partner_transactions[0].partner_reference as string;
    assert.equal((await stripeGet(`/v1/charges/${chargeId}`, acct)).status, 200, 'the charge is on the connected account');
    assert.equal((await stripeGet(`/v1/charges/${chargeId}`)).status, 404, 'not on the platform account');

    assert.equal((await post(a, `/v2/payments/${p.id}/captures`, { amount: 5000 })).statusCode, 200);
    assert.equal((await post(a, `/v2/payments/${p.id}/refunds`, { amount: 1500 })).statusCode, 200);
    const charge = (await stripeGet(`/v1/charges/${chargeId}`, acct)).body;
    assert.equal(charge.captured, true);
    assert.equal(charge.amount_refunded, 1500);
    const calls = proxy.requests.filter((r) => r.method === 'POST');
    assert.ok(calls.length >= 3);
    for (const r of calls) {
      assert.equal(r.key, PLATFORM_KEY, `${r.path} with the platform's key`);
      assert.equal(r.stripeAccount, acct, `${r.path} on the connected account`);
      assert.ok(r.idempotencyKey, `${r.path} with an Idempotency-Key`);
    }
  });

  it("an entity with its own account: every call made with that account's key, none with another's", async () => {
    const before = proxy.requests.length;
    const created = await pay(b);
    assert.equal(created.statusCode, 200, created.body);
    const p = created.json();
    assert.equal(p.authorization.status, 'AUTHORIZED');
    const v = await post(b, `/v2/payments/${p.id}/voids`, {});
    assert.equal(v.statusCode, 200, v.body);
    const mine = proxy.requests.slice(before);
    assert.ok(mine.length >= 2);
    for (const r of mine) {
      assert.equal(r.key, B_KEY, `${r.method} ${r.path}`);
      assert.equal(r.stripeAccount, undefined);
    }
  });

  it('a card number that is not a Stripe test number is tokenised with POST /v1/tokens, as the published schema says', async (t2) => {
    t2.diagnostic(schemaVersionNote());
    const before = proxy.requests.length;
    const created = await pay(b, '4111111111111111', 2500);
    assert.equal(created.statusCode, 200, created.body);
    const p = created.json();
    assert.equal(p.authorization.status, 'AUTHORIZED', JSON.stringify(p.authorization));
    assert.equal(p.authorization.partner_transactions[0].card.last_four_digits, '1111');
    const tokens = proxy.requests.slice(before).filter((r) => r.path === '/v1/tokens');
    assert.equal(tokens.length, 1);
    assert.equal(tokens[0]!.verdict, 'ok', 'the request fits the schema');
    assert.equal(tokens[0]!.key, B_KEY);
    assert.match(tokens[0]!.idempotencyKey ?? '', /:token$/, 'a retried authorization tokenises once');
    const charge = proxy.requests.slice(before).find((r) => r.path === '/v1/charges' && r.method === 'POST');
    assert.ok(charge, 'the charge followed with the token');
  });

  it("the schema check refuses what Stripe refuses (so the connector's passing request means something)", () => {
    const ok = new URLSearchParams({ 'card[number]': '4111111111111111', 'card[exp_month]': '11', 'card[exp_year]': year, 'card[cvc]': '123' });
    assert.equal(checkTokenCreate(ok), undefined);
    assert.match(checkTokenCreate(new URLSearchParams({ ...Object.fromEntries(ok), 'card[cvv]': '123' })) ?? '', /unknown parameter: card\[cvv\]/);
    assert.match(checkTokenCreate(new URLSearchParams({ 'card[number]': '4111111111111111', 'card[exp_year]': year })) ?? '', /Missing required param: card\[exp_month\]/);
    assert.match(checkTokenCreate(new URLSearchParams({ number: '4111111111111111' })) ?? '', /unknown parameter: number/);
  });

  it("a notification signed with an account's webhook secret is accepted; one signed with no configured secret is 400", async () => {
    const { default: Stripe } = await import('stripe');
    const payload = JSON.stringify({ id: 'evt_b', object: 'event', type: 'customer.created', data: { object: { id: 'cus_1' } } });
    const send = (secret: string) => t.app.inject({
      method: 'POST', url: '/partners/stripe/webhooks',
      headers: { 'content-type': 'application/json', 'stripe-signature': new Stripe(B_KEY).webhooks.generateTestHeaderString({ payload, secret }) }, payload,
    });
    const ok = await send(B_WEBHOOK);
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(ok.json(), { received: true, applied: 0 });
    assert.equal((await send('whsec_someone_else')).statusCode, 400);
  });
});

describe('PAYD_PARTNERS accounts', () => {
  it('refuses accounts that cannot run, naming the account and the field', () => {
    const cases: [unknown, RegExp][] = [
      [{ name: 'stripe' }, /secret key .* or per-entity accounts/],
      [{ name: 'stripe', accounts: [] }, /accounts must be a non-empty array/],
      [{ name: 'stripe', accounts: [{ secret_key: 'sk_test_x' }] }, /accounts\[0\]\.entities must be a non-empty array/],
      [{ name: 'stripe', accounts: [{ entities: ['e1'] }] }, /accounts\[0\]: give its own secret_key_env or a stripe_account/],
      [{ name: 'stripe', accounts: [{ entities: ['e1'], stripe_account: 'acct_1' }] }, /needs the entry's secret_key_env/],
      [{ name: 'stripe', secret_key: 'sk_test_x', accounts: [{ entities: ['e1'], stripe_account: 'bad' }] }, /stripe_account must be a connected account id/],
      [{ name: 'stripe', secret_key: 'sk_test_x', accounts: [{ entities: ['e1'], stripe_account: 'acct_1' }, { entities: ['e1'], secret_key: 'sk_test_y' }] }, /entity e1 is named by two accounts/],
      [{ name: 'stripe', accounts: [{ entities: ['e1'], secret_key: 'pk_test_y' }] }, /accounts\[0\]: the Stripe secret key must start with/],
      [{ name: 'stripe', accounts: [{ entities: ['e1'], secret_key: 'sk_test_y', secrets: 1 }] }, /accounts\[0\]\.secrets is not a field/],
      [{ name: 'stripe', accounts: [{ entities: ['e1'], secret_key_env: 'NOPE' }] }, /accounts\[0\]\.secret_key_env names NOPE, which is not set/],
    ];
    for (const [entry, message] of cases) {
      assert.throws(() => parsePartners(JSON.stringify([entry]), {}), (err: Error) => err instanceof PartnersConfigError && message.test(err.message), JSON.stringify(entry));
    }
    const ok = parsePartners(JSON.stringify([{ name: 'stripe', accounts: [{ entities: ['e1', 'e2'], secret_key: 'sk_test_y', webhook_secret: 'whsec_y' }] }]), {});
    assert.deepEqual(ok, [{ name: 'stripe', connector: 'stripe', accounts: [{ entities: ['e1', 'e2'], secretKey: 'sk_test_y', webhookSecret: 'whsec_y' }] }]);
  });
});
