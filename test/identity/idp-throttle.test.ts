// The sign-in throttle: per (account, IP address) (5 failures in 15 minutes), per IP
// address (30) and per account from any addresses (100, far higher: issue 14 item 10,
// "lockout as denial of service"), kept in the database so that two payd processes on one
// database share it, holding against parallel guesses, and never telling whether an
// email has an account. Sign-ups: 10 per address.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { MASTER_KEY, createTestApp, type TestApp } from '../helpers/app.ts';
import { type Client, FORM, PASSWORD, alertOf, authorizeRequest, cookieOf, count, createClient, createUser, hiddenFields, signIn } from './idp-helpers.ts';

const CB = 'https://rp.example/callback';

describe('identity provider: sign-in throttle', () => {
  let t: TestApp;
  let second: FastifyInstance;
  let app: Client;
  let url: string;

  before(async () => {
    t = await createTestApp();
    // A second payd on the same database: what one process learns, the other knows.
    second = await buildApp({ config: t.config, db: t.testDb.db, masterKey: MASTER_KEY, logger: false });
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
      assert.equal(res.headers['retry-after'], '900');
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

  it('stops a guess spread over many addresses at the per-account ceiling', async () => {
    await createUser(t, 'ceiling@example.com');
    // 100 failures from 100 addresses (written directly: the attack's result, not its cost).
    await t.testDb.db.query(`INSERT INTO idp_login_failures (email, ip) SELECT 'ceiling@example.com', '10.1.' || (g / 250) || '.' || (g % 250) FROM generate_series(1, 100) g`);
    const res = await signIn(t.app, url, { email: 'ceiling@example.com', password: PASSWORD }, { ip: '172.16.9.9' });
    assert.equal(res.statusCode, 429, 'past 100 failures the account waits, whatever the address');
  });

  it('throttles an IP address that tries many accounts', async () => {
    const ip = '192.0.2.7';
    for (let i = 0; i < 30; i++) {
      const res = await signIn(t.app, url, { email: `spray-${i}@example.com`, password: 'guess' }, { ip });
      assert.equal(res.statusCode, 200, `attempt ${i}`);
    }
    assert.equal((await signIn(second, url, { email: 'spray-new@example.com', password: 'guess' }, { ip })).statusCode, 429);
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
    for (let i = 0; i < 10; i++) assert.equal((await signUp(`bulk-${i}@example.com`, '192.0.2.99')).statusCode, 303, `sign-up ${i}`);
    const refused = await signUp('bulk-10@example.com', '192.0.2.99');
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.headers['retry-after'], '900');
    assert.equal(await count(t, `SELECT count(*)::int AS n FROM idp_users WHERE email = 'bulk-10@example.com'`), 0, 'no account made');
    assert.equal((await signUp('elsewhere@example.com', '192.0.2.100')).statusCode, 303);
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
