// The second factor in headless Chromium (issue 40): a dashboard operator enrols an
// authenticator app on the provider's security page (the code computed here with
// otpauth), keeps the recovery codes shown once, then signs in to the dashboard with the
// password and a current TOTP code, and again with a recovery code.
import { launchChromium } from '../helpers/browser.ts';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as OTPAuth from 'otpauth';
import { type Browser } from 'playwright-core';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';

const PASSWORD = 'correct horse battery staple';

describe('second factor in Chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let a: Merchant;
  const email = 'olga@example.com';
  let secret = '';
  let recovery: string[] = [];

  before(async () => {
    const port = await freePort();
    base = `http://localhost:${port}`;
    t = await createTestApp({ baseUrl: base });
    await t.app.listen({ port, host: '127.0.0.1' });
    a = await t.createMerchant('Shop A');
    await t.app.inject({ method: 'POST', url: '/admin/v1/identity/users', headers: t.adminHeaders, payload: { email, password: PASSWORD } });
    const res = await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${a.entityId}/members`, headers: t.adminHeaders, payload: { email, role: 'operator' } });
    assert.equal(res.statusCode, 201, res.body);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const code = (offsetSteps: number) => new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), period: 30, digits: 6 })
    .generate({ timestamp: Date.now() + offsetSteps * 30_000 });

  /** The dashboard's sign-in through the hosted page, up to its second step, which is answered with `answer`. */
  const dashboardSignIn = async (answer: string) => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${base}/dashboard`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Second step: confirm it is you' }).waitFor();
    await page.getByLabel('Code from your authenticator app, or a recovery code').fill(answer);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(/\/dashboard\/[0-9a-f-]{36}$/);
    return page;
  };

  it('enrols an authenticator app and gets the recovery codes once', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${base}/oauth/account/security`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Authenticator app: off').waitFor();
    await page.getByLabel('Your password (to confirm it is you)').fill(PASSWORD);
    await page.getByRole('button', { name: 'Add an authenticator app' }).click();
    secret = (await page.locator('#totp-secret').textContent())!;
    assert.match(await page.locator('#totp-uri').getAttribute('href') ?? '', /^otpauth:\/\/totp\/.*secret=/);
    await page.getByLabel('The code your app shows now').fill(code(0));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByText('The authenticator app is on.').waitFor();
    recovery = await page.locator('#recovery-codes code').allTextContents();
    assert.equal(recovery.length, 10);
    await page.reload();
    assert.equal(await page.locator('#recovery-codes').count(), 0, 'shown once');
    await page.context().close();
  });

  it('signs in to the dashboard with the password and a TOTP code', async () => {
    // The enrolment used the current time step; the next one (within the allowed drift) is a new code.
    const page = await dashboardSignIn(code(1));
    await page.getByRole('link', { name: 'Payments', exact: true }).waitFor();
    await page.context().close();
  });

  it('signs in to the dashboard with a recovery code, which then is spent', async () => {
    const page = await dashboardSignIn(recovery[0]!);
    await page.context().close();
    const left = await t.testDb.db.query<{ n: string }>('SELECT count(*)::text AS n FROM idp_mfa_recovery_codes WHERE used_at IS NULL');
    assert.equal(left.rows[0]!.n, '9');
  });
});
