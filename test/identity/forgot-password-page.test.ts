// "Forgot password?" on the hosted sign-in page (issue 40): the link on the form, the
// page asking the email, the same answer for any address, the reset link read from a
// real SMTP sink (not the outbox, which keeps a redacted link), a new password that
// passes the first step and the second factor is still asked; a bad address is a 400 page naming the field; a second factor stays on.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SMTPServer } from 'smtp-server';
import * as OTPAuth from 'otpauth';
import { MASTER_KEY, createTestApp, type TestApp } from '../helpers/app.ts';
import { Mfa } from '../../src/identity/mfa/mfa.ts';
import { FORM, alertOf, authorizeRequest, cookieOf, createClient, createUser, hiddenFields, signIn } from './idp-helpers.ts';

const REDIRECT = 'https://shop.example/callback';

describe('hosted sign-in: forgot password', () => {
  let t: TestApp;
  let server: SMTPServer;
  let client: { client_id: string; client_secret: string };
  const received: string[] = [];
  let arrived: (() => void) | undefined;

  before(async () => {
    server = new SMTPServer({
      authOptional: true, disabledCommands: ['STARTTLS'], logger: false,
      onData(stream, _session, done) {
        let text = '';
        stream.on('data', (c: Buffer) => { text += c.toString(); }).on('end', () => { received.push(text); arrived?.(); done(); });
      },
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.server.address() as { port: number }).port;
    t = await createTestApp({ smtpUrl: `smtp://127.0.0.1:${port}` });
    const { id } = await createUser(t, 'reset@example.com');
    // A second factor, which the reset must leave on.
    const mfa = new Mfa(t.testDb.db, MASTER_KEY, 'payd');
    const e = (await mfa.startTotp(id, 'reset@example.com'))!;
    assert.ok(await mfa.confirmTotp(id, new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(e.secret) }).generate()));
    client = await createClient(t, { name: 'Shop', callback_urls: [REDIRECT] });
  });
  after(async () => {
    await t?.close();
    await new Promise<void>((r) => server.close(() => r()));
  });

  /** The forgot-password page reached by the sign-in form's link, posted with this email. */
  async function ask(email: string) {
    const a = authorizeRequest(client.client_id, REDIRECT);
    const login = await t.app.inject({ url: a.url });
    const href = /href="(\/oauth\/authorize\/forgot\?[^"]+)"/.exec(login.body)?.[1];
    assert.ok(href, 'the sign-in page links to forgot password');
    const page = await t.app.inject({ url: href.replace(/&amp;/g, '&') });
    assert.equal(page.statusCode, 200, page.body);
    const csrf = cookieOf(page, 'payd_idp_csrf') ?? cookieOf(login, 'payd_idp_csrf')!;
    const form = hiddenFields(page.body);
    form.set('email', email);
    return t.app.inject({ method: 'POST', url: '/oauth/authorize/forgot', headers: { ...FORM, cookie: csrf }, payload: form.toString() });
  }

  it('sends the reset link by mail and answers the same for an unknown address; the new password passes, the second factor is still asked', async () => {
    const mail = new Promise<void>((r) => { arrived = r; });
    const known = await ask('reset@example.com');
    const unknown = await ask('nobody@example.com');
    assert.equal(known.statusCode, 200);
    assert.equal(unknown.statusCode, 200);
    assert.equal(known.body, unknown.body, 'the same page whatever the address');
    // The timer bounds the wait for the mail, not a sleep.
    await Promise.race([mail, new Promise((_r, reject) => setTimeout(() => reject(new Error('no mail reached the SMTP server')), 10_000).unref())]);
    assert.equal(received.length, 1);
    const link = /(http:\/\/payd\.test\/identity\/v1\/password\/reset\?token=[A-Za-z0-9_-]+)/.exec(received[0]!.replace(/=\r\n/g, '').replace(/=3D/g, '='))?.[1];
    assert.ok(link, received[0]);
    const path = link.replace('http://payd.test', '');
    const form = await t.app.inject({ url: path });
    assert.equal(form.statusCode, 200);
    const done = await t.app.inject({ method: 'POST', url: '/identity/v1/password/reset', headers: FORM,
      payload: new URLSearchParams({ token: new URL(link).searchParams.get('token')!, password: 'a brand new passphrase 42' }).toString() });
    assert.equal(done.statusCode, 200, done.body);
    assert.match(done.body, /href="http:\/\/payd\.test\/oauth\/authorize\?/, 'Continue starts the sign-in again');
    const res = await signIn(t.app, authorizeRequest(client.client_id, REDIRECT).url, { email: 'reset@example.com', password: 'a brand new passphrase 42' });
    assert.equal(res.statusCode, 200, 'the password passed; the second step, not a code');
    assert.match(res.body, /action="\/oauth\/authorize\/mfa"/);
    assert.equal(cookieOf(res, 'payd_idp_session'), undefined);
  });

  it('refuses a malformed address with a 400 page naming the field', async () => {
    const res = await ask('not-an-address');
    assert.equal(res.statusCode, 400);
    assert.match(alertOf(res.body)!, /^Email: /);
  });
});
