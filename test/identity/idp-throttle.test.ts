// The sign-in throttle (src/identity/idp/throttle.ts): past 5 failures per (account,
// address) or 30 per address, the next attempt waits 1, 2, 4 ... s (up to 15 minutes),
// answered 429 with the real wait in Retry-After; failures of an account from other
// addresses never slow an address that has not failed for it (the owner cannot be locked
// out: issue 40 item 3). Kept in the database so that two payd processes on one database
// share it, holding against parallel guesses, never telling whether an email has an
// account, and shared by the hosted form, the SDK's password login and the password
// grant. Time moves with the app's TestClock, no sleeps. Sign-ups: 10 per address.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { MASTER_KEY, createTestApp, type TestApp } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';
import { type Client, FORM, basic, PASSWORD, alertOf, authorizeRequest, cookieOf, count, createClient, createUser, hiddenFields, signIn } from './idp-helpers.ts';

const CB = 'https://rp.example/callback';

describe('identity provider: sign-in throttle', () => {
  let t: TestApp;
  let second: FastifyInstance;
  let app: Client;
  let url: string;

  const clock = new TestClock();
  // Frozen: the 1 s wait after the 5th failure is the app clock's, not the time ten argon2 sign-ins take on a slow host.
  clock.freeze();

  before(async () => {
    t = await createTestApp({}, { clock: clock.now });
    // A second payd on the same database: what one process learns, the other knows.
    second = await buildApp({ config: t.config, db: t.testDb.db, masterKey: MASTER_KEY, logger: false, clock: clock.now });
    await second.ready();
    await createUser(t, 'known@example.com');
    await createUser(t, 'parallel@example.com');
    app = await createClient(t, { name: 'Shop', callback_urls: [CB] });
    url = authorizeRequest(app.client_id, CB).url;
  });
  after(async () => {
    await second?.close();
    await t?.close();
  });

  it('answers an unknown email exactly as a known one, failure after failure, then 429 for both at that address, across processes', async () => {
    const pages: Array<[number, string | undefined]> = [];
    const attacker = '10.0.0.66';
    for (const email of ['known@example.com', 'nobody@example.com']) {
      for (let i = 0; i < 5; i++) {
        const res = await signIn(i % 2 ? second : t.app, url, { email, password: `wrong ${i}` }, { ip: attacker });
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers.location, undefined);
        pages.push([res.statusCode, alertOf(res.body)]);
      }
    }
    assert.equal(new Set(pages.map((p) => p.join(' '))).size, 1, 'one answer for every failure');
    const known = await signIn(second, url, { email: 'known@example.com', password: PASSWORD }, { ip: attacker });
    const unknown = await signIn(t.app, url, { email: 'nobody@example.com', password: PASSWORD }, { ip: attacker });
    for (const res of [known, unknown]) {
      assert.equal(res.statusCode, 429, 'that address is throttled for that account, even with the right password');
      assert.equal(res.headers['retry-after'], '1', 'the real wait: 1 s after the 5th failure');
      assert.equal(res.headers.location, undefined);
    }
    assert.equal(alertOf(known.body), alertOf(unknown.body), 'the 429 page does not tell whether the email exists');
    assert.match(known.body, /<form/, 'the form is shown again');
  });

  it('does not let an attacker at one address lock the real user out: the right password from another address signs in', async () => {
    await createUser(t, 'victim@example.com');
    for (let i = 0; i < 8; i++) await signIn(t.app, url, { email: 'victim@example.com', password: `guess ${i}` }, { ip: '10.9.9.9' });
    assert.equal((await signIn(t.app, url, { email: 'victim@example.com', password: PASSWORD }, { ip: '10.9.9.9' })).statusCode, 429);
    const real = await signIn(second, url, { email: 'victim@example.com', password: PASSWORD }, { ip: '172.16.5.4' });
    assert.equal(real.statusCode, 303, 'the user, from their own address');
  });

  it('waits grow 1, 2, 4, 8 s with each further failure, up to 15 minutes, by the app\'s clock', async () => {
    await createUser(t, 'grow@example.com');
    const ip = '10.20.0.1';
    const attempt = (password = 'wrong guess') => signIn(t.app, url, { email: 'grow@example.com', password }, { ip });
    for (let i = 0; i < 5; i++) assert.equal((await attempt()).statusCode, 200, `free failure ${i}`);
    for (const wait of [1, 2, 4, 8]) {
      const refused = await attempt(PASSWORD);
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.headers['retry-after'], String(wait));
      assert.match(alertOf(refused.body)!, new RegExp(`Try again in ${wait} seconds?\\.`));
      clock.advance(wait * 1000 - 500);
      assert.equal((await attempt(PASSWORD)).statusCode, 429, 'not before the wait is over');
      clock.advance(500);
      assert.equal((await attempt()).statusCode, 200, `after ${wait} s one more try`);
    }
    // The cap: 20 more failures of that pair would mean 2^19 s; the wait stops at 15 minutes.
    await t.testDb.db.query(`INSERT INTO idp_login_failures (email, ip, created_at) SELECT 'grow@example.com', $1, $2 FROM generate_series(1, 20)`, [ip, new Date(clock.now())]);
    const capped = await attempt(PASSWORD);
    assert.equal(capped.statusCode, 429);
    assert.equal(capped.headers['retry-after'], '900');
    clock.advance(900_000);
    assert.equal((await attempt(PASSWORD)).statusCode, 303, 'the owner, at that address, after the wait');
    assert.equal(await count(t, `SELECT count(*)::int AS n FROM idp_login_failures WHERE email = 'grow@example.com' AND ip = '${ip}'`), 0, 'a success forgets that address\'s failures for the account');
  });

  it('100 failures from 20 addresses do not lock the owner out: the right password from a new address signs in; the attackers\' addresses wait', async () => {
    await createUser(t, 'owner@example.com');
    for (let a = 0; a < 20; a++) {
      for (let i = 0; i < 5; i++) {
        const res = await signIn(a % 2 ? second : t.app, url, { email: 'owner@example.com', password: `guess ${a}-${i}` }, { ip: `10.30.0.${a + 1}` });
        assert.equal(res.statusCode, 200, `address ${a}, failure ${i}`);
      }
    }
    assert.equal(await count(t, `SELECT count(*)::int AS n FROM idp_login_failures WHERE email = 'owner@example.com'`), 100);
    const owner = await signIn(t.app, url, { email: 'owner@example.com', password: PASSWORD }, { ip: '172.16.40.1' });
    assert.equal(owner.statusCode, 303, 'the owner, from an address that never failed for the account');
    // An attacker's address that failed already waits, even with the right password.
    assert.equal((await signIn(t.app, url, { email: 'owner@example.com', password: PASSWORD }, { ip: '10.30.0.7' })).statusCode, 429);
    // A fresh attacker address gets one try, then waits: past the account's 100 free failures.
    assert.equal((await signIn(t.app, url, { email: 'owner@example.com', password: 'fresh guess' }, { ip: '10.31.0.1' })).statusCode, 200);
    const again = await signIn(t.app, url, { email: 'owner@example.com', password: 'fresh guess 2' }, { ip: '10.31.0.1' });
    assert.equal(again.statusCode, 429, 'one try per address once the account is past its allowance');
    assert.equal(again.headers['retry-after'], '2');
  });

  it('the SDK\'s password login and the password grant share the throttle with the hosted form', async () => {
    await createUser(t, 'shared@example.com');
    const firstParty = await createClient(t, { name: 'Own app', callback_urls: [CB], first_party: true, allowed_origins: ['https://rp.example'], grant_types: ['authorization_code', 'password'] });
    const ip = '10.40.0.1';
    const sdk = (password: string) => t.app.inject({
      method: 'POST', url: '/identity/v1/password/login', headers: { 'content-type': 'application/json' }, remoteAddress: ip,
      payload: JSON.stringify({ client_id: firstParty.client_id, email: 'shared@example.com', password }),
    });
    const grant = (password: string) => second.inject({
      method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json', ...basic(firstParty) }, remoteAddress: ip,
      payload: JSON.stringify({ grant_type: 'password', username: 'shared@example.com', password }),
    });
    for (let i = 0; i < 3; i++) assert.equal((await sdk(`wrong ${i}`)).statusCode, 400);
    for (let i = 0; i < 2; i++) assert.equal((await grant(`wrong ${i}`)).json().error, 'invalid_grant');
    const form = await signIn(t.app, url, { email: 'shared@example.com', password: PASSWORD }, { ip });
    assert.equal(form.statusCode, 429, 'the hosted form counts the SDK\'s and the grant\'s failures');
    const bySdk = await sdk(PASSWORD);
    assert.equal(bySdk.statusCode, 429);
    assert.equal(bySdk.json().error, 'too_many_attempts');
    assert.equal(bySdk.headers['retry-after'], '1');
    const byGrant = await grant(PASSWORD);
    assert.equal(byGrant.statusCode, 429);
    assert.equal(byGrant.json().error, 'too_many_attempts');
    assert.equal(byGrant.headers['retry-after'], '1');
    clock.advance(1000);
    assert.equal((await grant(PASSWORD)).statusCode, 200, 'after the wait');
  });

  it('throttles an IP address that tries many accounts', async () => {
    const ip = '192.0.2.7';
    for (let i = 0; i < 30; i++) {
      const res = await signIn(t.app, url, { email: `spray-${i}@example.com`, password: 'guess' }, { ip });
      assert.equal(res.statusCode, 200, `attempt ${i}`);
    }
    const refused = await signIn(second, url, { email: 'spray-new@example.com', password: 'guess' }, { ip });
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.headers['retry-after'], '1');
    const elsewhere = await signIn(t.app, url, { email: 'known2@example.com', password: 'guess' }, { ip: '192.0.2.8' });
    assert.equal(elsewhere.statusCode, 200, 'another address is not affected');
  });

  it('parallel guesses from one address cannot slip past the limit: at most 5 passwords are checked', async () => {
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      signIn(i % 2 ? second : t.app, url, { email: 'parallel@example.com', password: `guess ${i}` }, { ip: '198.51.100.7' })));
    const checked = results.filter((r) => r.statusCode === 200).length;
    const throttled = results.filter((r) => r.statusCode === 429).length;
    assert.equal(checked + throttled, 12);
    assert.ok(checked <= 5, `${checked} passwords checked`);
    assert.equal(await count(t, `SELECT count(*)::int AS n FROM idp_login_failures WHERE email = 'parallel@example.com'`), checked, 'refused attempts are not counted');
  });

  it('throttles sign-ups per address: 10 in 15 minutes, then 429; another address is not affected', async () => {
    const signUp = async (email: string, ip: string) => {
      const page = await t.app.inject({ url: url.replace('/oauth/authorize?', '/oauth/authorize/signup?'), remoteAddress: ip });
      assert.equal(page.statusCode, 200, page.body);
      const form = hiddenFields(page.body);
      form.set('email', email);
      form.set('password', PASSWORD);
      return t.app.inject({ method: 'POST', url: '/oauth/authorize/signup', headers: { ...FORM, cookie: cookieOf(page, 'payd_idp_csrf') ?? '' }, payload: form.toString(), remoteAddress: ip });
    };
    for (let i = 0; i < 10; i++) assert.equal((await signUp(`bulk-${i}@example.com`, '192.0.2.99')).statusCode, 200, `sign-up ${i}`);
    const refused = await signUp('bulk-10@example.com', '192.0.2.99');
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.headers['retry-after'], '900');
    assert.equal(await count(t, `SELECT count(*)::int AS n FROM idp_signup_requests WHERE email = 'bulk-10@example.com'`), 0, 'no sign-up recorded');
    assert.equal((await signUp('elsewhere@example.com', '192.0.2.100')).statusCode, 200);
  });

  it('a successful sign-in does not count as a failure', async () => {
    await createUser(t, 'fine@example.com');
    for (let i = 0; i < 7; i++) {
      const res = await signIn(t.app, url, { email: 'fine@example.com', password: PASSWORD }, { ip: '203.0.113.9' });
      assert.equal(res.statusCode, 303);
    }
    assert.equal(await count(t, `SELECT count(*)::int AS n FROM idp_login_failures WHERE email = 'fine@example.com'`), 0);
  });
});
