// Logout in headless Chromium: a link from another site (the CSRF a GET logout invites)
// only shows a confirmation, and the user's own click on it signs out and goes back to
// the registered URI; a relying party holding the id_token signs the user out at once.
import { launchChromium } from '../helpers/browser.ts';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';

const PASSWORD = 'correct horse battery staple';

describe('identity logout in Chromium', () => {
  let t: TestApp;
  let payd: string;
  let rp: http.Server;
  let rpBase: string;
  let browser: Browser;
  let webApp: { client_id: string };

  before(async () => {
    // The relying party, and another site's page with a logout link on it.
    rp = http.createServer((req, res) => {
      const url = new URL(req.url!, 'http://x');
      res.writeHead(200, { 'content-type': 'text/html' });
      if (url.pathname === '/evil') {
        res.end(`<!doctype html><title>evil</title><a id="go" href="${url.searchParams.get('to')!.replace(/"/g, '&quot;')}">free prize</a>`);
        return;
      }
      res.end(`<!doctype html><title>received</title><h1 id="got">${url.search.replace(/</g, '&lt;')}</h1>`);
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
    await post('/admin/v1/identity/users', { email: 'lin@example.com', password: PASSWORD, given_name: 'Lin' });
    webApp = await post('/admin/v1/identity/applications', { name: 'Web', callback_urls: [`${rpBase}/callback`, `${rpBase}/bye`], token_endpoint_auth_method: 'none' });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await new Promise((r) => rp?.close(r));
    await t?.close();
  });

  /** Signs in through the hosted page; returns the code's exchange (id_token) for the public client. */
  async function signIn(page: Page) {
    const verifier = randomBytes(32).toString('base64url');
    const q = new URLSearchParams({
      response_type: 'code', client_id: webApp.client_id, redirect_uri: `${rpBase}/callback`, scope: 'openid',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    });
    await page.goto(`${payd}/oauth/authorize?${q}`);
    await page.getByLabel('Email').fill('lin@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/callback\?/);
    const code = new URL(page.url()).searchParams.get('code')!;
    const res = await fetch(`${payd}/oauth/token`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: `${rpBase}/callback`, client_id: webApp.client_id, code_verifier: verifier }),
    });
    assert.equal(res.status, 200);
    return ((await res.json()) as { id_token: string }).id_token;
  }

  /** Whether the browser is still signed in at payd (prompt=none answers a code). */
  async function signedIn(context: BrowserContext) {
    const page = await context.newPage();
    const q = new URLSearchParams({
      response_type: 'code', client_id: webApp.client_id, redirect_uri: `${rpBase}/callback`, scope: 'openid', prompt: 'none',
      code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'), code_challenge_method: 'S256',
    });
    await page.goto(`${payd}/oauth/authorize?${q}`);
    await page.waitForURL(/\/callback\?/);
    const has = new URL(page.url()).searchParams.has('code');
    await page.close();
    return has;
  }

  it('a logout link on another site only asks; the user\'s click signs out and goes back to the registered URI', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page);
    const logout = `${payd}/oauth/logout?${new URLSearchParams({ client_id: webApp.client_id, post_logout_redirect_uri: `${rpBase}/bye`, state: 'st-9' })}`;
    assert.equal(await signedIn(context), true, 'signed in');
    await page.goto(`${rpBase}/evil?${new URLSearchParams({ to: logout })}`);
    await page.click('#go');
    await page.getByText('Do you want to sign out of payd?').waitFor();
    assert.equal(await signedIn(context), true, 'the link alone signed nobody out');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/bye\?/);
    assert.equal(new URL(page.url()).searchParams.get('state'), 'st-9');
    assert.equal(await signedIn(context), false);
    await context.close();
  });

  it('the relying party with the id_token as hint signs the user out at once', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const idToken = await signIn(page);
    await page.goto(`${payd}/oauth/logout?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: `${rpBase}/bye`, state: 'st-10' })}`);
    await page.waitForURL(/\/bye\?/);
    assert.equal(new URL(page.url()).searchParams.get('state'), 'st-10');
    assert.equal(await signedIn(context), false);
    await context.close();
  });
});
