// The SSRF guard, offline: the address classifier on every textual form of private and
// reserved addresses (IPv4 notations, IPv6 forms that embed an IPv4 address), the
// refusal of such URLs when an endpoint or a link's webhook is registered, and the
// refusal at call time of a name that resolves to loopback. No packet is ever sent to
// any of these addresses (the only listener is a loopback receiver that must stay silent).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type TestApp } from '../helpers/app.ts';
import { addressProblem, parseIPv6, publicTargetProblem } from '../../src/webhooks/target.ts';
import { type Resolver, sendWebhook } from '../../src/webhooks/send.ts';
import { enqueue, FAST, type Receiver, startReceiver, waitFor } from './helpers.ts';

const REFUSED: Array<[string, RegExp]> = [
  // IPv4, every range
  ['0.0.0.0', /this network/], ['0.1.2.3', /this network/],
  ['10.0.0.1', /private/], ['10.255.255.255', /private/],
  ['100.64.0.1', /CGNAT/], ['100.127.255.254', /CGNAT/],
  ['127.0.0.1', /loopback/], ['127.255.255.254', /loopback/],
  ['169.254.169.254', /link-local/],
  ['172.16.0.1', /private/], ['172.31.255.255', /private/],
  ['192.0.0.8', /IETF/], ['192.0.2.1', /documentation/], ['192.88.99.1', /6to4 relay/],
  ['192.168.1.1', /private/], ['198.18.0.1', /benchmarking/], ['198.19.255.255', /benchmarking/],
  ['198.51.100.7', /documentation/], ['203.0.113.9', /documentation/],
  ['224.0.0.1', /multicast/], ['239.255.255.250', /multicast/], ['240.0.0.1', /reserved/], ['255.255.255.255', /broadcast/],
  // odd IPv4 notations (the WHATWG URL parser reads them as IPv4)
  ['2130706433', /loopback/], ['0x7f000001', /loopback/], ['0x7f.1', /loopback/], ['0177.0.0.1', /loopback/],
  ['127.1', /loopback/], ['127.0.1', /loopback/], ['0xa9.0xfe.0xa9.0xfe', /link-local/], ['2852039166', /link-local/],
  ['017700000001', /loopback/], ['0', /this network/],
  // IPv6 specials
  ['::', /unspecified/], ['::1', /loopback/], ['[::1]', /loopback/], ['0:0:0:0:0:0:0:1', /loopback/],
  ['fe80::1', /link-local/], ['fe80::1%eth0', /link-local/], ['febf::1', /link-local/], ['fec0::1', /site-local/],
  ['fc00::1', /unique local/], ['fd12:3456::1', /unique local/], ['ff02::1', /multicast/], ['ff0e::1', /multicast/],
  ['2001:db8::1', /documentation/], ['3fff::1', /documentation/], ['2001:2::1', /IETF special-purpose/],
  ['100::1', /not global unicast/], ['4000::1', /not global unicast/],
  // IPv4-mapped (dotted and hex), -translated, -compatible
  ['::ffff:127.0.0.1', /IPv4-mapped.*127\.0\.0\.1.*loopback/], ['::ffff:7f00:1', /IPv4-mapped.*loopback/],
  ['::ffff:169.254.169.254', /IPv4-mapped.*link-local/], ['::ffff:a9fe:a9fe', /IPv4-mapped.*169\.254\.169\.254/],
  ['0:0:0:0:0:ffff:10.0.0.1', /IPv4-mapped.*private/], ['[::ffff:192.168.0.1]', /IPv4-mapped.*private/],
  ['::ffff:0:127.0.0.1', /IPv4-translated.*loopback/],
  ['::a9fe:a9fe', /IPv4-compatible.*169\.254\.169\.254/], ['::169.254.169.254', /IPv4-compatible.*link-local/],
  ['::127.0.0.1', /IPv4-compatible.*loopback/], ['::10.1.2.3', /IPv4-compatible.*private/], ['::8.8.8.8', /IPv4-compatible/],
  // 6to4, Teredo, NAT64
  ['2002:a9fe:a9fe::1', /6to4.*169\.254\.169\.254/], ['2002:7f00:1::', /6to4.*loopback/], ['2002:c0a8:101::1', /6to4.*private/],
  ['2001:0:a9fe:a9fe::1', /Teredo server.*169\.254\.169\.254/],
  // Teredo client 127.0.0.1: last 32 bits are 127.0.0.1 XOR 0xffffffff = 80ff:fffe
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', /Teredo client.*127\.0\.0\.1/],
  ['64:ff9b::127.0.0.1', /NAT64.*loopback/], ['64:ff9b::a9fe:a9fe', /NAT64.*link-local/], ['64:ff9b:1::1', /local-use NAT64/],
  // not addresses at all
  ['localhost', /not an IP/], ['', /not an IP/], ['1.2.3.4.5', /not an IP/], ['::g', /not an IP/],
];

const PUBLIC = [
  '8.8.8.8', '1.1.1.1', '93.184.216.34', '100.63.255.255', '100.128.0.0', '172.15.255.255', '172.32.0.0', '192.0.1.1',
  '198.17.255.255', '198.20.0.0', '223.255.255.255', '2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450:4007:80e::200e',
  '::ffff:8.8.8.8', '::ffff:808:808', '64:ff9b::8.8.8.8', '2002:808:808::1', '2001:0:4136:e378:8000:63bf:f7f7:f7f7',
  '0x08080808', '134744072',
];

describe('SSRF guard: the address classifier', () => {
  for (const [address, why] of REFUSED) {
    it(`refuses ${JSON.stringify(address)}`, () => {
      const got = addressProblem(address);
      assert.ok(got, `${address} was classified as public`);
      assert.match(got, why);
    });
  }
  for (const address of PUBLIC) {
    it(`accepts ${address}`, () => assert.equal(addressProblem(address), undefined));
  }

  it('parses every IPv6 spelling to the same groups', () => {
    const mapped = [0, 0, 0, 0, 0, 0xffff, 0xa9fe, 0xa9fe];
    for (const s of ['::ffff:169.254.169.254', '::FFFF:A9FE:A9FE', '0:0:0:0:0:ffff:a9fe:a9fe', '[::ffff:a9fe:a9fe]', '0000:0000::ffff:169.254.169.254']) {
      assert.deepEqual(parseIPv6(s), mapped, s);
    }
    assert.equal(parseIPv6('1:2:3:4:5:6:7:8:9'), undefined);
    assert.equal(parseIPv6('1::2::3'), undefined);
  });

  it('refuses URLs whose literal host is private, whatever its notation', async () => {
    for (const url of [
      'http://[::a9fe:a9fe]/', 'http://[2002:a9fe:a9fe::1]/', 'http://[::ffff:169.254.169.254]/latest/meta-data', 'http://0x7f.1/',
      'http://2130706433:8080/', 'http://0177.0.0.1/', 'http://127.1/', 'http://[64:ff9b::7f00:1]/', 'http://%31%32%37.0.0.1/',
    ]) {
      assert.match(String(await publicTargetProblem(url)), /^refused: /, url);
    }
  });

  it('refuses a name when one of its addresses is private (localhost resolves to loopback)', async () => {
    assert.match(String(await publicTargetProblem('http://localhost:9/')), /refused: localhost resolves to the non-public address/);
  });
});

describe('SSRF guard in the app (PAYD_WEBHOOK_ALLOW_PRIVATE_TARGETS off)', () => {
  let t: TestApp;
  let rx: Receiver;
  before(async () => {
    t = await createTestApp({ ...FAST, webhookAllowPrivateTargets: false });
    rx = await startReceiver();
    t.app.webhooks.dispatcher.start((err) => console.error(err));
  });
  after(async () => {
    await t.close();
    await rx.close();
  });

  it('refuses to register an endpoint or a link webhook on a private literal address (400, nothing stored)', async () => {
    const m = await t.createMerchant();
    for (const url of ['http://[::a9fe:a9fe]/h', 'http://[2002:a9fe:a9fe::1]/h', 'http://127.1/h', 'http://0x7f000001/h', 'http://[::ffff:10.0.0.1]/h', 'http://[fd00::1]/h']) {
      const res = await t.app.inject({ method: 'PUT', url: `/admin/v1/entities/${m.entityId}/webhook-endpoint`, headers: t.adminHeaders, payload: { url } });
      const p = expectProblem(res, 400);
      assert.equal(p.invalid_params?.[0]?.name, 'url', url);
      assert.match(p.invalid_params![0]!.reason, /non-public address/);
      const link = await t.app.inject({ method: 'POST', url: '/v2/payment-links', headers: m.auth, payload: { amount: 100, currency: 'EUR', webhook: { url } } });
      assert.equal(expectProblem(link, 400).invalid_params?.[0]?.name, 'webhook.url', url);
    }
    const { rows } = await t.testDb.db.query('SELECT 1 FROM webhook_endpoints WHERE entity_id = $1', [m.entityId]);
    assert.equal(rows.length, 0);
    const ok = await t.app.inject({ method: 'PUT', url: `/admin/v1/entities/${m.entityId}/webhook-endpoint`, headers: t.adminHeaders, payload: { url: 'https://merchant.example/h' } });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  it('refuses at call time a name that resolves to loopback; the receiver hears nothing', async () => {
    const m = await t.createMerchant();
    const url = rx.url.replace('127.0.0.1', 'localhost');
    const put = await t.app.inject({ method: 'PUT', url: `/admin/v1/entities/${m.entityId}/webhook-endpoint`, headers: t.adminHeaders, payload: { url } });
    assert.equal(put.statusCode, 200, put.body);
    const { id } = await enqueue(t.testDb.db, { entityId: m.entityId, type: 'payment.captured', data: {} });
    const attempt = await waitFor(async () => {
      const e = (await t.app.inject({ url: `/admin/v1/entities/${m.entityId}/webhook-events/${id}`, headers: t.adminHeaders })).json();
      return e.deliveries[0]?.attempts?.[0];
    }, 10_000, 'the first attempt');
    assert.match(attempt.error, /refused: localhost resolves to the non-public address/);
    assert.equal(attempt.status_code, null);
    assert.equal(rx.requests.length, 0, 'nothing reached the loopback receiver');
  });
});

describe('SSRF guard: the connection goes to the address it checked', () => {
  let rx: Receiver;
  before(async () => (rx = await startReceiver()));
  after(() => rx.close());
  const port = () => new URL(rx.url).port;
  const attempt = (url: string, resolve: Resolver, allowPrivateTargets = false) => sendWebhook({
    url, extraHeaders: [], paydHeaders: {}, body: '{}', timeoutMs: 5000, allowPrivateTargets, stop: new AbortController().signal, resolve,
  });

  it('a name that answers public, then loopback (DNS rebinding), is refused at connection time', async () => {
    const answers = ['93.184.216.34', '127.0.0.1'];
    let calls = 0;
    const rebinding: Resolver = async () => [{ address: answers[Math.min(calls++, 1)]!, family: 4 }];
    // The first answer is what any earlier check would have seen; the connection resolves again.
    assert.deepEqual(await rebinding('hooks.rebind.test'), [{ address: '93.184.216.34', family: 4 }]);
    const out = await attempt(`http://hooks.rebind.test:${port()}/x`, rebinding);
    assert.match(String(out.error), /^refused: hooks\.rebind\.test resolves to the non-public address 127\.0\.0\.1, loopback/);
    assert.equal(out.statusCode, null);
    assert.equal(rx.requests.length, 0, 'nothing was sent');
  });

  it('refuses a name with any private address among its answers, and IPv6 forms of them', async () => {
    for (const address of ['::ffff:127.0.0.1', '::a9fe:a9fe', '2002:7f00:1::1', 'fe80::1']) {
      const out = await attempt(`http://hooks.mixed.test:${port()}/x`, async () => [{ address: '93.184.216.34', family: 4 }, { address, family: 6 }]);
      assert.match(String(out.error), /^refused: hooks\.mixed\.test resolves to the non-public address/, address);
    }
    const literal = await attempt(`http://[::ffff:7f00:1]:${port()}/x`, async () => []);
    assert.match(String(literal.error), /^refused: ::ffff:7f00:1 is the non-public address/);
    assert.equal(rx.requests.length, 0, 'nothing was sent');
  });

  it('connects to the address the lookup returned (private targets allowed, as in development)', async () => {
    const out = await attempt(`http://hooks.merchant.test:${port()}/ok`, async () => [{ address: '127.0.0.1', family: 4 }], true);
    assert.equal(out.statusCode, 200, String(out.error));
    const got = rx.requests.at(-1)!;
    assert.equal(got.path, '/ok');
    assert.equal(got.headers.host, `hooks.merchant.test:${port()}`);
    rx.requests.length = 0;
  });
});
