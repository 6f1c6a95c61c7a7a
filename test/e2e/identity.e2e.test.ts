// The identity provider in headless Chromium: sign-in through the hosted page, the
// messenger_code redirect, and the console's "Log in as" with the event shown in the
// user's Recent Activity; a non-administrator is kept out of the console.
import { launchChromium } from '../helpers/browser.ts';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, type Page } from 'playwright-core';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';

const SHOTS = 'test-results/e2e';
const PASSWORD = 'correct horse battery staple';


describe('identity in Chromium', () => {
  let t: TestApp;
  let payd: string;
  let rp: http.Server;
  let rpBase: string;
  let browser: Browser;
  let webApp: { client_id: string };
  let bot: { client_id: string };
  let lin: string;
  let thirdParty: { client_id: string };

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // A relying party / messenger stand-in that shows what it received.
    rp = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      // A page of another site linking to the console (issue 14 item 7).
      if (req.url === '/link') return res.end(`<!doctype html><title>elsewhere</title><a id="go" href="${payd}/console">Console</a>`);
      res.end(`<!doctype html><title>received</title><h1 id="got">${new URL(req.url!, 'http://x').search.replace(/</g, '&lt;')}</h1>`);
    });
    await new Promise<void>((r) => rp.listen(0, '127.0.0.1', r));
    rpBase = `http://localhost:${(rp.address() as AddressInfo).port}`;
    const port = await freePort();
    payd = `http://127.0.0.1:${port}`;
    t = await createTestApp({ baseUrl: payd });
    await t.app.listen({ port, host: '127.0.0.1' });
    const post = async (url: string, payload: object) => {
      const res = await t.app.inject({ method: 'POST', url, headers: t.adminHeaders, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    };
    await post('/admin/v1/identity/users', { email: 'admin@example.com', password: PASSWORD, given_name: 'Root', is_admin: true });
    await post('/admin/v1/identity/users', { email: 'mallory@example.com', password: PASSWORD });
    lin = (await post('/admin/v1/identity/users', { email: 'lin@example.com', password: PASSWORD, given_name: 'Lin' })).id;
    webApp = await post('/admin/v1/identity/applications', { name: 'Web', callback_urls: [`${rpBase}/callback`], token_endpoint_auth_method: 'none' });
    bot = await post('/admin/v1/identity/applications', { name: 'Bot', callback_urls: [`${rpBase}/account_linking`], response_types: ['messenger_code'] });
    await post('/admin/v1/identity/applications', { name: 'Support', callback_urls: [`${rpBase}/support`], allowed_origins: [rpBase, payd], first_party: true });
    thirdParty = await post('/admin/v1/identity/applications', { name: 'Partner Shop', callback_urls: [`${rpBase}/partner`], token_endpoint_auth_method: 'none', first_party: false });
    // Long callback URLs and origins: the console's Applications table must still fit the page (issue 14 item 4).
    await post('/admin/v1/identity/applications', {
      name: 'A rather long application name for the table', first_party: true,
      callback_urls: [`https://a-very-long-subdomain-name-for-testing.example.com/oauth/callback/with/a/long/path/segment?tenant=${'x'.repeat(60)}`, 'https://b.example/cb'],
      allowed_origins: ['https://another-very-long-origin-name-for-the-console-table.example.com'],
    });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await new Promise((r) => rp?.close(r));
    await t?.close();
  });

  const signIn = async (page: Page, email: string) => {
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };

  it('signs in through the hosted page and returns a code to the application', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    const verifier = randomBytes(32).toString('base64url');
    const q = new URLSearchParams({
      response_type: 'code', client_id: webApp.client_id, redirect_uri: `${rpBase}/callback`, state: 'st-1', scope: 'openid email',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    });
    await page.goto(`${payd}/oauth/authorize?${q}`);
    await page.screenshot({ path: `${SHOTS}/idp-login.png`, fullPage: true });
    await signIn(page, 'lin@example.com');
    await page.waitForURL(/\/callback\?/);
    const got = new URL(page.url()).searchParams;
    assert.equal(got.get('state'), 'st-1');
    assert.ok(got.get('code'));
    await page.close();
  });

  it('messenger_code: back to the account-linking URL with authorization_code appended', async () => {
    const page = await browser.newPage();
    const q = new URLSearchParams({ response_type: 'messenger_code', client_id: bot.client_id, redirect_uri: `${rpBase}/account_linking?psid=77`, account_linking_token: 'ALT' });
    await page.goto(`${payd}/oauth/authorize?${q}`);
    await signIn(page, 'lin@example.com');
    await page.waitForURL(/account_linking\?/);
    const got = new URL(page.url()).searchParams;
    assert.equal(got.get('psid'), '77');
    assert.ok(got.get('authorization_code'));
    await page.close();
  });

  it('console: a link from another site opens it without a redirect loop or a login event; sign-out ends it', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${payd}/console`);
    await signIn(page, 'admin@example.com');
    await page.waitForURL(/\/console$/);
    const events = async () => (await t.testDb.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM idp_user_events e JOIN idp_users u ON u.id = e.user_id WHERE u.email = 'admin@example.com'`)).rows[0]!.n;
    const before = await events();
    await page.goto(`${rpBase}/link`);
    await page.click('#go');
    await page.waitForURL(/\/console$/);
    await page.getByRole('table', { name: 'Applications' }).waitFor();
    assert.equal(await events(), before, 'no login event for opening the console');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You are signed out of the console.').waitFor();
    // Signed out of the provider too: the console asks for the password again.
    await page.goto(`${payd}/console`);
    await page.waitForURL(/\/oauth\/authorize/);
    await signIn(page, 'admin@example.com');
    await page.waitForURL(/\/console$/);
    // A sign-out at the provider (confirmed by the user) ends the console session as well.
    await page.goto(`${payd}/oauth/logout`);
    await page.getByRole('button', { name: /sign out/i }).click();
    await page.getByText('You are signed out.').waitFor();
    await page.goto(`${payd}/console`);
    await page.waitForURL(/\/oauth\/authorize/);
    await page.getByLabel('Password').waitFor();
    await context.close();
  });

  it('console: an administrator logs in as a user; Recent Activity shows it; a non-administrator is refused', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${payd}/console/users`);
    await signIn(page, 'admin@example.com');
    await page.waitForURL(/\/console$/);
    await page.getByRole('link', { name: 'Profiles' }).click();
    await page.getByRole('link', { name: 'lin@example.com' }).click();
    await page.getByRole('button', { name: /Log in as/ }).waitFor();
    await page.screenshot({ path: `${SHOTS}/console-profile.png`, fullPage: true });
    await page.getByLabel('Application and redirect URL').selectOption({ label: `Support: ${rpBase}/support` });
    await page.getByRole('button', { name: /Log in as/ }).click();
    await page.waitForURL(/\/support\?/);
    assert.ok(new URL(page.url()).searchParams.get('code'), 'the login completes at the application');
    await page.goto(`${payd}/console/users/${lin}`);
    const activity = await page.locator('#recent-activity').textContent();
    assert.match(activity ?? '', /login \(login_as by admin@example\.com\)/);
    await page.screenshot({ path: `${SHOTS}/console-activity.png`, fullPage: true });
    // Applications: edit the Allowed Callback URLs of one.
    await page.getByRole('link', { name: 'Applications' }).click();
    await page.getByRole('link', { name: 'Web' }).click();
    await page.getByLabel('Allowed Callback URLs (one per line)').fill(`${rpBase}/callback\n${rpBase}/callback2`);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(/\/console$/);
    const saved = await t.testDb.db.query<{ callback_urls: string[] }>('SELECT callback_urls FROM idp_applications WHERE client_id = $1', [webApp.client_id]);
    assert.deepEqual(saved.rows[0]!.callback_urls, [`${rpBase}/callback`, `${rpBase}/callback2`]);
    await context.close();

    const other = await browser.newContext();
    const p2 = await other.newPage();
    await p2.goto(`${payd}/console`);
    await signIn(p2, 'mallory@example.com');
    await p2.getByText('Only administrators may use the console.').waitFor();
    await other.close();
    const { rows } = await t.testDb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM idp_user_events WHERE auth_type = 'login_as' AND user_id = $1`, [lin]);
    assert.equal(rows[0]!.n, 1);
  });

  it('consent: a third-party application shows the consent page after sign-in; Allow returns the code, and the next time no page', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    const authorize = (state: string) => {
      const verifier = randomBytes(32).toString('base64url');
      return `${payd}/oauth/authorize?${new URLSearchParams({
        response_type: 'code', client_id: thirdParty.client_id, redirect_uri: `${rpBase}/partner`, state, scope: 'openid profile email',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
      })}`;
    };
    await page.goto(authorize('c-1'));
    await signIn(page, 'lin@example.com');
    await page.getByRole('heading', { name: 'Allow Partner Shop to use your account?' }).waitFor();
    const scopes = await page.locator('#consent-scopes li').allTextContents();
    assert.deepEqual(scopes, ['Know who you are: your payd account identifier', 'See your name', 'See your email address and whether it is verified']);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'the consent page fits a phone');
    await page.screenshot({ path: `${SHOTS}/idp-consent.png`, fullPage: true });
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(/\/partner\?/);
    const got = new URL(page.url()).searchParams;
    assert.equal(got.get('state'), 'c-1');
    assert.ok(got.get('code'));
    // Remembered: straight back with a code.
    await page.goto(authorize('c-2'));
    await page.waitForURL(/\/partner\?/);
    assert.ok(new URL(page.url()).searchParams.get('code'));
    // The user's applications page lists it; Revoke removes it.
    await page.goto(`${payd}/oauth/account/applications`);
    await page.getByText('Partner Shop', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Revoke access of Partner Shop' }).click();
    await page.getByText('Access revoked.').waitFor();
    assert.equal(await page.getByText('Partner Shop', { exact: true }).count(), 0);
    await context.close();
  });

  it('console: the Applications table fits the page at 1280 px and 375 px (long URLs wrap, the table scrolls inside its box)', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${payd}/console`);
    await signIn(page, 'admin@example.com');
    await page.waitForURL(/\/console$/);
    await page.getByRole('table', { name: 'Applications' }).waitFor();
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 800 });
      const fit = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
      await page.screenshot({ path: `${SHOTS}/console-applications-${width}.png`, fullPage: true });
      assert.ok(fit.scroll <= fit.inner, `at ${width} px the page is ${fit.scroll} px wide`);
    }
    await context.close();
  });
});
