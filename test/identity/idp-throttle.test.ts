// The sign-in throttle: per account (5 failures in 15 minutes) and per IP address (30),
// kept in the database so that two payd processes on one database share it, holding
// against parallel guesses, and never telling whether an email has an account.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { MASTER_KEY, createTestApp, type TestApp } from '../helpers/app.ts';
import { type Client, PASSWORD, alertOf, authorizeRequest, count, createClient, createUser, signIn } from './idp-helpers.ts';

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

  it('answers an unknown email exactly as a known one, failure after failure, then 429 for both across processes', async () => {
    const pages: Array<[number, string | undefined]> = [];
    for (const email of ['known@example.com', 'nobody@example.com']) {
      for (let i = 0; i < 5; i++) {
        const res = await signIn(i % 2 ? second : t.app, url, { email, password: `wrong ${i}` }, { ip: `10.0.0.${email.length}` });
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers.location, undefined);
        pages.push([res.statusCode, alertOf(res.body)]);
      }
    }
    assert.equal(new Set(pages.map((p) => p.join(' '))).size, 1, 'one answer for every failure');
    const known = await signIn(second, url, { email: 'known@example.com', password: PASSWORD }, { ip: '10.0.0.1' });
    const unknown = await signIn(t.app, url, { email: 'nobody@example.com', password: PASSWORD }, { ip: '10.0.0.2' });
    for (const res of [known, unknown]) {
      assert.equal(res.statusCode, 429, 'the account is throttled whatever the IP, even with the right password');
      assert.equal(res.headers['retry-after'], '900');
      assert.equal(res.headers.location, undefined);
    }
    assert.equal(alertOf(known.body), alertOf(unknown.body), 'the 429 page does not tell whether the email exists');
    assert.match(known.body, /<form/, 'the form is shown again');
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

  it('parallel guesses cannot slip past the limit: at most 5 passwords are checked', async () => {
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      signIn(i % 2 ? second : t.app, url, { email: 'parallel@example.com', password: `guess ${i}` }, { ip: `198.51.100.${i}` })));
    const checked = results.filter((r) => r.statusCode === 200).length;
    const throttled = results.filter((r) => r.statusCode === 429).length;
    assert.equal(checked + throttled, 12);
    assert.ok(checked <= 5, `${checked} passwords checked`);
    assert.equal(await count(t, `SELECT count(*)::int AS n FROM idp_login_failures WHERE email = 'parallel@example.com'`), checked, 'refused attempts are not counted');
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
