// The real identity SDK against payd (issue 22): a relying party's page bundles the
// unmodified @reachfive/identity-core with esbuild and, in headless Chromium, signs a
// user up, logs in with responseType code and messenger_code (the codes are exchanged
// at the token endpoint as the spec says), reads the session (sso/data), renews tokens
// silently (checkSession: response_mode=web_message in a hidden iframe, PKCE),
// reads the profile, logs out, resets a forgotten password from the mail in the outbox,
// and surfaces the errors the SDK's documentation describes. The SDK always calls
// https://{domain}: payd and the shop are served over TLS with a certificate made here.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { build } from 'esbuild';
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts';

const SHOTS = 'test-results/e2e';
const PASSWORD = 'correct horse battery staple';

interface Client { client_id: string; client_secret?: string }

// Run twice: the shop and payd on one site (both localhost), and on TWO sites
// (https://shop.test and https://id.example, mapped to 127.0.0.1 by Chromium's
// --host-resolver-rules), where the SDK reads payd's session cookie cross-site.
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--ignore-certificate-errors', '--host-resolver-rules=MAP id.example 127.0.0.1, MAP shop.test 127.0.0.1'];
const SITES = [
  { label: 'one site (localhost)', payd: 'localhost', shop: 'localhost' },
  { label: 'two sites (shop.test and id.example)', payd: 'id.example', shop: 'shop.test' },
] as const;

for (const sites of SITES) describe(`the identity SDK (@reachfive/identity-core) against payd, in Chromium, ${sites.label}`, () => {
  let dir: string;
  let t: TestApp;
  let paydServer: https.Server;
  let shopServer: https.Server;
  let payd: string;
  let shop: string;
  let browser: Browser;
  let web: Client;
  let spa: Client;
  let bot: Client;
  let smtp: SmtpSink;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    dir = mkdtempSync(path.join(tmpdir(), 'payd-sdk-'));
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,DNS:id.example,DNS:shop.test'], { stdio: 'ignore' });
    const tls = { key: readFileSync(key), cert: readFileSync(cert) };

    // payd over TLS: its own request handling behind a Node https server.
    const port = await freePort();
    payd = `https://${sites.payd}:${port}`;
    smtp = await startSmtpSink(); // identity mails: their links arrive only by SMTP
    t = await createTestApp({ baseUrl: payd, smtpUrl: smtp.url });
    paydServer = https.createServer(tls, (req, res) => t.app.routing(req, res));
    await new Promise<void>((r) => paydServer.listen(port, '127.0.0.1', r));

    // The shop: every page loads the SDK bundle and shows its query string.
    const bundle = (await build({
      entryPoints: ['test/e2e/identity-sdk/page.ts'], bundle: true, write: false, format: 'iife', platform: 'browser', target: 'es2020', logLevel: 'silent',
    })).outputFiles[0]!.text;
    shopServer = https.createServer(tls, (req, res) => {
      const url = new URL(req.url!, 'https://x');
      if (url.pathname === '/sdk.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        return res.end(bundle);
      }
      const client = url.searchParams.get('client') ?? ''; // the callback pages: the client the shop page used (localStorage)
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><title>shop</title><p id="status">loading</p><p id="got">${url.search.replace(/</g, '&lt;')}</p>
<script>window.PAYD_SDK = { domain: ${JSON.stringify(`${sites.payd}:${port}`)}, clientId: ${JSON.stringify(client)} || localStorage.getItem('client') };
localStorage.setItem('client', window.PAYD_SDK.clientId);</script><script src="/sdk.js"></script>`);
    });
    await new Promise<void>((r) => shopServer.listen(0, '127.0.0.1', r));
    shop = `https://${sites.shop}:${(shopServer.address() as AddressInfo).port}`;

    const post = async (url: string, payload: object) => {
      const res = await t.app.inject({ method: 'POST', url, headers: t.adminHeaders, payload });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    };
    await post('/admin/v1/identity/users', { email: 'lin@example.com', password: PASSWORD, given_name: 'Lin', family_name: 'Ma' });
    await post('/admin/v1/identity/users', { email: 'locked@example.com', password: PASSWORD });
    await post('/admin/v1/identity/users', { email: 'admin@example.com', password: PASSWORD, is_admin: true });
    web = await post('/admin/v1/identity/applications', { name: 'Shop', callback_urls: [`${shop}/callback`], allowed_origins: [shop] });
    spa = await post('/admin/v1/identity/applications', { name: 'Shop SPA', callback_urls: [`${shop}/callback`], allowed_origins: [shop], token_endpoint_auth_method: 'none' });
    bot = await post('/admin/v1/identity/applications', { name: 'Bot', callback_urls: [`${shop}/account_linking`], allowed_origins: [shop], response_types: ['messenger_code'] });
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  });
  after(async () => {
    for (const c of own) await c.close().catch(() => {});
    await browser?.close();
    await new Promise((r) => shopServer?.close(r));
    paydServer?.closeAllConnections();
    await new Promise((r) => paydServer?.close(r));
    await t?.close();
    await smtp?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const own: BrowserContext[] = [];
  /** A Chromium of its own, normal profile, third-party cookies allowed (cookie_controls_mode 0, a normal window's default). */
  const ownBrowser = async () => {
    const profile = mkdtempSync(path.join(dir, 'profile-'));
    mkdirSync(path.join(profile, 'Default'));
    writeFileSync(path.join(profile, 'Default', 'Preferences'), JSON.stringify({ profile: { cookie_controls_mode: 0, block_third_party_cookies: false } }));
    const context = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, ignoreHTTPSErrors: true });
    own.push(context);
    return context;
  };
  const open = async (client: Client, pathname = '/') => {
    // Two sites: a browser of its own with a normal (not incognito) profile. Playwright's
    // contexts are like incognito windows, where Chromium blocks third-party cookies; a
    // normal profile allows them, and the SDK's hidden frame on shop.test must send
    // payd's SameSite=None session cookie to id.example. (Closed with its page's context.)
    const context = sites.payd === sites.shop
      ? await browser.newContext({ ignoreHTTPSErrors: true })
      : await ownBrowser();
    const page = context.pages()[0] ?? await context.newPage();
    await page.goto(`${shop}${pathname}?client=${client.client_id}`);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    return page;
  };
  /** Runs an SDK call in the page; what it rejects with comes back as { rejected }. */
  const sdk = (page: Page, script: string) => page.evaluate(`window.sdk.${script}.then((v) => ({ resolved: v ?? null }), (e) => ({ rejected: window.sdkError(e) }))`) as
    Promise<{ resolved?: Record<string, unknown> | null; rejected?: Record<string, unknown> }>;
  const exchange = (c: Client, code: string, redirectUri: string) => t.app.inject({
    method: 'POST', url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${c.client_id}:${c.client_secret}`).toString('base64')}` },
    payload: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri }).toString(),
  });
  const claims = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

  it('signs up (confirmed by the mailed link) and logs in with responseType code: the shop gets codes it exchanges for the user\'s tokens', async () => {
    const page = await open(web);
    // Sign-up answers {} whatever the address (no account enumeration); the mailed link creates the account.
    const signup = await sdk(page, `signup({ data: { email: 'sam@example.com', password: 'a sturdy passphrase 42', givenName: 'Sam', familyName: 'Doe' }, returnToAfterEmailConfirmation: '${shop}/?client=${web.client_id}', auth: { redirectUri: '${shop}/callback', state: 'st-signup' } })`);
    assert.deepEqual(signup, { resolved: {} }, JSON.stringify(signup));
    const link = smtp.link(await smtp.next('sam@example.com'), '/identity/v1/signup/confirm?token=');
    await page.goto(link.href);
    await page.getByRole('button', { name: 'Create my account' }).click();
    await page.waitForURL(`${shop}/?client=**`);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    assert.equal((await sdk(page, 'getSessionInfo()')).resolved?.email, 'sam@example.com', 'signed in by the confirmation');
    void sdk(page, `loginWithPassword({ email: 'sam@example.com', password: 'a sturdy passphrase 42', auth: { redirectUri: '${shop}/callback', state: 'st-signup' } })`).catch(() => {});
    await page.waitForURL(`${shop}/callback?**`);
    let got = new URL(page.url());
    assert.equal(got.searchParams.get('state'), 'st-signup');
    let tokens = await exchange(web, got.searchParams.get('code')!, `${shop}/callback`);
    assert.equal(tokens.statusCode, 200, tokens.body);
    assert.equal(claims(tokens.json().id_token).email, 'sam@example.com');
    assert.equal(claims(tokens.json().id_token).given_name, 'Sam');
    await page.screenshot({ path: `${SHOTS}/identity-sdk-signup.png` });

    const again = await open(web);
    void sdk(again, `loginWithPassword({ email: 'lin@example.com', password: '${PASSWORD}', auth: { redirectUri: '${shop}/callback', state: 'st-login' } })`).catch(() => {});
    await again.waitForURL(`${shop}/callback?**`);
    got = new URL(again.url());
    tokens = await exchange(web, got.searchParams.get('code')!, `${shop}/callback`);
    assert.equal(tokens.statusCode, 200, tokens.body);
    assert.equal(claims(tokens.json().id_token).email, 'lin@example.com');
    await page.context().close();
    await again.context().close();
  });

  it('logs in with responseType messenger_code: the messenger\'s URL gets the authorization code, exchanged with the account-linking URL', async () => {
    const page = await open(bot);
    const linking = `${shop}/account_linking?account_linking_token=ALT-42`;
    void sdk(page, `loginWithPassword({ email: 'lin@example.com', password: '${PASSWORD}', auth: { responseType: 'messenger_code', redirectUri: '${linking}' } })`).catch(() => {});
    await page.waitForURL(`${shop}/account_linking?**`);
    const got = new URL(page.url());
    assert.equal(got.searchParams.get('account_linking_token'), 'ALT-42');
    const code = got.searchParams.get('authorization_code')!;
    assert.ok(code);
    const tokens = await exchange(bot, code, `${shop}/account_linking`);
    assert.equal(tokens.statusCode, 200, tokens.body);
    await page.context().close();
  });

  it('surfaces the documented errors: wrong password, unknown email (the same), a throttled account, an unregistered redirect URI', async () => {
    const page = await open(web);
    const wrong = await sdk(page, `loginWithPassword({ email: 'lin@example.com', password: 'not the password', auth: { redirectUri: '${shop}/callback', state: 's' } })`);
    assert.deepEqual(wrong.rejected, { error: 'invalid_grant', errorDescription: 'Invalid email or password.', errorUserMsg: 'Invalid email or password.', requestId: wrong.rejected?.requestId });
    const unknown = await sdk(page, `loginWithPassword({ email: 'nobody@example.com', password: 'not the password', auth: { redirectUri: '${shop}/callback', state: 's' } })`);
    assert.equal(unknown.rejected?.error, 'invalid_grant');
    assert.equal(unknown.rejected?.errorDescription, wrong.rejected?.errorDescription);
    let throttled: Awaited<ReturnType<typeof sdk>> | undefined;
    for (let i = 0; i < 6; i++) throttled = await sdk(page, `loginWithPassword({ email: 'locked@example.com', password: 'not the password', auth: { redirectUri: '${shop}/callback', state: 's' } })`);
    assert.equal(throttled!.rejected?.error, 'too_many_attempts');
    assert.match(String(throttled!.rejected?.errorUserMsg), /Try again in \d+ seconds?\./);

    void sdk(page, `loginWithPassword({ email: 'lin@example.com', password: '${PASSWORD}', auth: { redirectUri: '${shop}/elsewhere', state: 's' } })`).catch(() => {});
    await page.waitForURL(`${payd}/oauth/authorize?**`);
    assert.match(await page.locator('[role="alert"]').innerText(), /not one of the Allowed Callback URLs/);
    await page.screenshot({ path: `${SHOTS}/identity-sdk-bad-redirect.png` });
    await page.context().close();
  });

  it('a public client: PKCE, checkSession through web_message, getSessionInfo, getUser, logout', async () => {
    const page = await open(spa);
    void sdk(page, `loginWithPassword({ email: 'lin@example.com', password: '${PASSWORD}', auth: { redirectUri: '${shop}/callback' } })`).catch(() => {});
    await page.waitForURL(`${shop}/callback?**`);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    const code = new URL(page.url()).searchParams.get('code')!;
    const exchanged = await sdk(page, `exchangeAuthorizationCodeWithPkce({ code: '${code}', redirectUri: '${shop}/callback' })`);
    assert.ok(exchanged.resolved?.accessToken, JSON.stringify(exchanged));
    assert.equal((exchanged.resolved?.idTokenPayload as Record<string, unknown>).email, 'lin@example.com');

    // Silent authentication: a hidden iframe, prompt=none, response_mode=web_message.
    const silent = await sdk(page, `checkSession({ redirectUri: '${shop}/callback' })`);
    assert.ok(silent.resolved?.accessToken, JSON.stringify(silent));
    const info = await sdk(page, 'getSessionInfo()');
    assert.equal(info.resolved?.isAuthenticated, true, JSON.stringify(info));
    assert.equal(info.resolved?.email, 'lin@example.com');
    const user = await sdk(page, `getUser({ accessToken: '${String(silent.resolved!.accessToken)}', fields: 'email,given_name' })`);
    assert.equal(user.resolved?.email, 'lin@example.com');
    assert.equal(user.resolved?.givenName, 'Lin');

    // logout with tokens (a public client): the SDK revokes them first, parses the answer
    // of /oauth/revoke as JSON, then goes to the logout page.
    const accessToken = String(silent.resolved!.accessToken);
    void sdk(page, `logout({ redirectTo: '${shop}/bye' }, { tokens: ['${accessToken}'] })`).catch(() => {});
    await page.waitForURL(`${shop}/bye**`);
    const gone = await t.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${accessToken}` } });
    assert.equal(gone.statusCode, 401, 'the SDK revoked the access token before logging out');
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    const after = await sdk(page, 'getSessionInfo()');
    assert.equal(after.resolved?.isAuthenticated, false);
    const none = await sdk(page, `checkSession({ redirectUri: '${shop}/callback' })`);
    assert.equal(none.rejected?.error, 'login_required');
    await page.context().close();
  });

  it('a confidential client: checkSession rejects with unsupported_response_type instead of waiting', async () => {
    const page = await open(web);
    const answer = await Promise.race([
      sdk(page, `checkSession({ redirectUri: '${shop}/callback' })`),
      new Promise<{ timedOut: true }>((r) => setTimeout(() => r({ timedOut: true }), 10_000)), // bounds the wait (a hang fails), not a sleep
    ]);
    assert.equal((answer as { rejected?: Record<string, unknown> }).rejected?.error, 'unsupported_response_type', JSON.stringify(answer));
    await page.context().close();
  });

  it('a forgotten password: the reset mail goes by SMTP (the console shows it with the link redacted); its link sets a new password that then signs in', async () => {
    await t.app.inject({ method: 'POST', url: '/admin/v1/identity/users', headers: t.adminHeaders, payload: { email: 'forgot@example.com', password: PASSWORD } });
    const page = await open(web);
    const asked = await sdk(page, `requestPasswordReset({ email: 'forgot@example.com' })`);
    assert.equal(asked.rejected, undefined, JSON.stringify(asked));
    // The console shows the mail as the outbox keeps it: the link redacted.
    await page.goto(`${payd}/console/mail`);
    await page.getByLabel('Email').fill('admin@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console$/);
    await page.goto(`${payd}/console/mail`);
    await page.getByText('Reset your Shop password').waitFor();
    assert.match(await page.locator('.mail').first().innerText(), /To forgot@example\.com/);
    await page.screenshot({ path: `${SHOTS}/console-mail.png`, fullPage: true });
    const kept = await page.locator('.mail pre').first().innerText();
    assert.match(kept, /password\/reset\?token=\[redacted\]/);
    const link = smtp.link(await smtp.next('forgot@example.com'), '/password/reset?token=');
    assert.doesNotMatch(kept, new RegExp(link.searchParams.get('token')!));
    await page.goto(link.href);
    await page.fill('#password', 'a brand new sturdy passphrase');
    await page.click('button[type=submit]');
    await page.waitForSelector('[role="status"]');
    await page.screenshot({ path: `${SHOTS}/identity-sdk-reset.png` });
    const shopPage = await page.context().newPage();
    await shopPage.goto(`${shop}/?client=${web.client_id}`);
    await shopPage.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    const old = await sdk(shopPage, `loginWithPassword({ email: 'forgot@example.com', password: '${PASSWORD}', auth: { redirectUri: '${shop}/callback', state: 's' } })`);
    assert.equal(old.rejected?.error, 'invalid_grant');
    void sdk(shopPage, `loginWithPassword({ email: 'forgot@example.com', password: 'a brand new sturdy passphrase', auth: { redirectUri: '${shop}/callback', state: 's' } })`).catch(() => {});
    await shopPage.waitForURL(`${shop}/callback?**`);
    assert.ok(new URL(shopPage.url()).searchParams.get('code'));
    await page.context().close();
  });
});
