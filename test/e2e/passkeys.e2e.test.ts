// Passkeys in headless Chromium (issue 40), WebAuthn through Chromium's virtual
// authenticator (CDP WebAuthn domain: ctap2, internal transport, resident keys, user
// verification): a dashboard member enrols a passkey on the provider's security page
// (payd's own script calls navigator.credentials.create), keeps the recovery codes shown
// once, then signs in to the dashboard with the password and the passkey (the same
// authenticator's credential, on a new browser context), and with a recovery code on a
// browser that has no passkey. http://localhost is a secure context, so the origin is
// localhost (the RP ID is its host name).
import { launchChromium } from '../helpers/browser.ts';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Browser, type CDPSession, type Page } from 'playwright-core';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';

const PASSWORD = 'correct horse battery staple';

/** The part of CDP's WebAuthn.Credential this test reads and passes on (the object keeps all its fields). */
interface VirtualCredential { credentialId: string; isResidentCredential: boolean; rpId?: string; privateKey: string; userHandle?: string; signCount: number }

describe('passkeys in Chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  const email = 'petra@example.com';
  let credential: VirtualCredential | undefined;
  let recovery: string[] = [];

  before(async () => {
    const port = await freePort();
    base = `http://localhost:${port}`;
    t = await createTestApp({ baseUrl: base });
    await t.app.listen({ port, host: '127.0.0.1' });
    const a = await t.createMerchant('Shop P');
    await t.app.inject({ method: 'POST', url: '/admin/v1/identity/users', headers: t.adminHeaders, payload: { email, password: PASSWORD } });
    const res = await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${a.entityId}/members`, headers: t.adminHeaders, payload: { email, role: 'operator' } });
    assert.equal(res.statusCode, 201, res.body);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A page of a new browser context with a virtual platform authenticator (CDP), holding `credentials`. */
  const pageWithAuthenticator = async (credentials: VirtualCredential[] = []): Promise<{ page: Page; cdp: CDPSession; authenticatorId: string }> => {
    const page = await (await browser.newContext()).newPage();
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    });
    for (const c of credentials) await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: c });
    return { page, cdp, authenticatorId };
  };

  /** The dashboard's sign-in through the hosted page, up to its second step. */
  const toSecondStep = async (page: Page) => {
    await page.goto(`${base}/dashboard`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Second step: confirm it is you' }).waitFor();
  };
  const lastEvent = async () => (await t.testDb.db.query<{ second_factor: string | null }>(
    'SELECT e.second_factor FROM idp_user_events e JOIN idp_users u ON u.id = e.user_id WHERE u.email = $1 ORDER BY e.date DESC LIMIT 1', [email])).rows[0];

  it('enrols a passkey on the security page and gets the recovery codes once', async () => {
    const { page, cdp, authenticatorId } = await pageWithAuthenticator();
    await page.goto(`${base}/oauth/account/security`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Passkeys: none').waitFor();
    await page.getByLabel('Name of the passkey').fill('Work laptop');
    await page.getByLabel('Confirm with your password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('button', { name: 'Create the passkey' }).click();
    await page.getByText('The passkey Work laptop is added.').waitFor();
    recovery = await page.locator('#recovery-codes code').allTextContents();
    assert.equal(recovery.length, 10);
    assert.equal(await page.locator('.passkey-name').textContent(), 'Work laptop');
    const stored = await t.testDb.db.query<{ transports: string[] }>('SELECT transports FROM idp_passkeys');
    assert.deepEqual(stored.rows.map((r) => r.transports), [['internal']]);
    await page.reload();
    assert.equal(await page.locator('#recovery-codes').count(), 0, 'shown once');
    // The authenticator's credential, to put in another browser context's authenticator (the same device, later).
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    assert.equal(credentials.length, 1);
    assert.equal(credentials[0]!.rpId, 'localhost');
    credential = credentials[0]!;
    await page.context().close();
  });

  it('signs in to the dashboard with the password and the passkey', async () => {
    const { page, cdp, authenticatorId } = await pageWithAuthenticator([credential!]);
    await toSecondStep(page);
    await page.getByRole('button', { name: 'Use a passkey' }).click();
    await page.waitForURL(/\/dashboard\/[0-9a-f-]{36}$/);
    await page.getByRole('link', { name: 'Payments', exact: true }).waitFor();
    assert.deepEqual(await lastEvent(), { second_factor: 'passkey' });
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    const row = (await t.testDb.db.query<{ counter: string; last_used_at: Date | null }>('SELECT counter::text, last_used_at FROM idp_passkeys')).rows[0]!;
    assert.equal(row.counter, String(credentials[0]!.signCount), 'the stored counter is the authenticator\'s');
    assert.ok(row.last_used_at);
    await page.context().close();
  });

  it('signs in to the dashboard with a recovery code when the passkey is not at hand', async () => {
    const page = await (await browser.newContext()).newPage();
    await toSecondStep(page);
    await page.getByLabel('Code from your authenticator app, or a recovery code').fill(recovery[0]!);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(/\/dashboard\/[0-9a-f-]{36}$/);
    assert.deepEqual(await lastEvent(), { second_factor: 'recovery' });
    const left = await t.testDb.db.query<{ n: string }>('SELECT count(*)::text AS n FROM idp_mfa_recovery_codes WHERE used_at IS NULL');
    assert.equal(left.rows[0]!.n, '9');
    await page.context().close();
  });
});
