// Social login in headless Chromium (issue 14): a relying party of payd sends the browser
// to payd's sign-in page, the user clicks "Continue with Upstream", signs in at the
// upstream provider (a second payd on another port), and comes back to the relying party
// with a code whose ID token names the upstream's user; the next sign-in in a new browser
// reaches the same local user. Screenshots under test-results/e2e. Found: the sign-in
// stopped on the upstream's form (Chromium applied the form page's CSP form-action, which
// listed only the upstream and the downstream, to the redirect on to the relying party).
import { launchChromium } from '../helpers/browser.ts';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser } from 'playwright-core';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';

const SHOTS = 'test-results/e2e';
const PASSWORD = 'correct horse battery staple';

describe('social login in Chromium', () => {
  let up: TestApp;
  let down: TestApp;
  let downBase: string;
  let rpServer: http.Server;
  let rpCallback: string;
  let rp: { client_id: string; client_secret: string };
  let browser: Browser;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const [upPort, downPort] = [await freePort(), await freePort()];
    const upBase = `http://localhost:${upPort}`;
    downBase = `http://localhost:${downPort}`;
    up = await createTestApp({ baseUrl: upBase });
    await up.app.listen({ port: upPort, host: '127.0.0.1' });
    down = await createTestApp({ baseUrl: downBase });
    await down.app.listen({ port: downPort, host: '127.0.0.1' });
    // The relying party's callback: a page that only says it got there.
    rpServer = http.createServer((_req, res) => res.end('<!doctype html><title>Shop</title><p>Back at the shop</p>'));
    await new Promise<void>((resolve) => rpServer.listen(0, '127.0.0.1', resolve));
    rpCallback = `http://localhost:${(rpServer.address() as AddressInfo).port}/rp/callback`;
    const op = async (t: TestApp, url: string, payload: object) => {
      const res = await t.app.inject({ method: 'POST', url, headers: t.adminHeaders, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    };
    await op(up, '/admin/v1/identity/users', { email: 'uma@example.com', password: PASSWORD, given_name: 'Uma', family_name: 'Upstream', email_verified: true });
    const upstreamApp = await op(up, '/admin/v1/identity/applications', {
      name: 'payd downstream', callback_urls: [`${downBase}/oauth/federation/callback`], id_token_signed_response_alg: 'RS256',
    });
    await op(down, '/admin/v1/identity/providers', { id: 'upstream', name: 'Upstream', issuer: upBase, client_id: upstreamApp.client_id, client_secret: upstreamApp.client_secret });
    rp = await op(down, '/admin/v1/identity/applications', { name: 'Shop', callback_urls: [rpCallback] });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await down?.close();
    await up?.close();
    await new Promise((r) => rpServer?.close(r));
  });

  /** One sign-in through the upstream in a fresh browser; the ID token's claims. */
  async function signInThroughUpstream(shot?: string): Promise<Record<string, unknown>> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const verifier = randomBytes(32).toString('base64url');
    const q = new URLSearchParams({
      response_type: 'code', client_id: rp.client_id, redirect_uri: rpCallback, scope: 'openid profile email', state: 'rp-state', nonce: 'rp-nonce',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256',
    });
    await page.goto(`${downBase}/oauth/authorize?${q}`);
    const button = page.getByRole('link', { name: 'Continue with Upstream' });
    await button.waitFor();
    if (shot) await page.screenshot({ path: `${SHOTS}/${shot}-signin.png`, fullPage: true });
    await button.click();
    // The upstream's own sign-in page.
    await page.waitForURL((u) => !u.href.startsWith(downBase));
    await page.getByLabel('Email').fill('uma@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    if (shot) await page.screenshot({ path: `${SHOTS}/${shot}-upstream.png`, fullPage: true });
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => u.href.startsWith(rpCallback));
    await page.getByText('Back at the shop').waitFor();
    const back = new URL(page.url());
    assert.equal(back.searchParams.get('state'), 'rp-state');
    const code = back.searchParams.get('code')!;
    await context.close();
    const token = await fetch(`${downBase}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${rp.client_id}:${rp.client_secret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: rpCallback, code_verifier: verifier }),
    });
    assert.equal(token.status, 200, await token.clone().text());
    const idToken = ((await token.json()) as { id_token: string }).id_token;
    return JSON.parse(Buffer.from(idToken.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
  }

  it('signs in with the upstream account, and the next time reaches the same local user', async () => {
    const first = await signInThroughUpstream('social-login');
    assert.equal(first.email, 'uma@example.com');
    assert.equal(first.given_name, 'Uma');
    assert.equal(first.nonce, 'rp-nonce');
    const second = await signInThroughUpstream();
    assert.equal(second.sub, first.sub, 'the link is used, no second account');
    const users = await down.testDb.db.query('SELECT 1 FROM idp_users WHERE email = $1', ['uma@example.com']);
    assert.equal(users.rows.length, 1);
  });
});
