// The Webhooks page's endpoints and the Checkout origins page in headless Chromium
// (issues 43 and 42): an admin adds an endpoint with some event types (a refused URL said
// on the form first), opens its page, rotates its secret, sends a test event, deletes it
// after the confirmation; adds a checkout origin (a refused one first) and removes it;
// another merchant's admin gets a 404. On every page, at 375 px and at 1280 px: axe-core
// finds no violation at all, and the page does not scroll sideways.
// Screenshots under test-results/e2e/dashboard-endpoints-*.png.
import { assertNoAxeViolations, assertNoSidewaysScroll, launchChromium } from '../helpers/browser.ts';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { type Browser, type Page } from 'playwright-core';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';

const SHOTS = 'test-results/e2e';
const PASSWORD = 'correct horse battery staple';
const VIEWPORTS = [{ width: 375, height: 812 }, { width: 1280, height: 800 }];

describe('the dashboard\'s webhook endpoints and checkout origins in Chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let a: Merchant;
  let b: Merchant;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const port = await freePort();
    base = `http://localhost:${port}`;
    t = await createTestApp({ baseUrl: base });
    await t.app.listen({ port, host: '127.0.0.1' });
    a = await t.createMerchant('Shop with a rather long name, to test narrow screens');
    b = await t.createMerchant('Other shop');
    for (const [email, entity] of [['ada.lovelace.administrator@long-domain-name.example.com', a], ['bea@example.com', b]] as const) {
      await t.app.inject({ method: 'POST', url: '/admin/v1/identity/users', headers: t.adminHeaders, payload: { email, password: PASSWORD } });
      const res = await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${entity.entityId}/members`, headers: t.adminHeaders, payload: { email, role: 'admin' } });
      assert.equal(res.statusCode, 201, res.body);
    }
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const check = async (page: Page, name: string, width: number) => {
    await assertNoAxeViolations(page, `${name} ${width}`);
    await assertNoSidewaysScroll(page, name, width);
    await page.screenshot({ path: `${SHOTS}/dashboard-endpoints-${name}-${width}.png`, fullPage: true });
  };
  const signedIn = async (email: string, viewport: { width: number; height: number }) => {
    const context = await browser.newContext({ viewport, bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${base}/dashboard`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/dashboard\/[0-9a-f-]{36}$/);
    return page;
  };

  for (const viewport of VIEWPORTS) {
    it(`at ${viewport.width} px: endpoints added, changed, rotated, tested, deleted; checkout origins; axe finds nothing, nothing scrolls sideways`, async () => {
      const w = viewport.width;
      const url = `https://hooks.example/payd-${w}`;
      const page = await signedIn('ada.lovelace.administrator@long-domain-name.example.com', viewport);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('heading', { name: 'Add an endpoint' }).waitFor();
      await page.getByText('No endpoint: events are kept').waitFor();
      await check(page, 'webhooks-empty', w);

      // A refused URL, said on the form; then the endpoint with two event types.
      await page.getByLabel('Endpoint URL (https)').fill('ftp://hooks.example/payd');
      await page.getByRole('button', { name: 'Add the endpoint' }).click();
      await page.getByRole('alert').filter({ hasText: 'The endpoint was not saved: url must be an http or https URL' }).waitFor();
      await check(page, 'webhooks-refused', w);
      await page.getByLabel('Endpoint URL (https)').fill(url);
      await page.getByLabel('All event types, those added later too').uncheck();
      await page.getByLabel(/^payment\.authorized:/).check();
      await page.getByLabel(/^payment\.captured:/).check();
      await page.getByRole('button', { name: 'Add the endpoint' }).click();
      await page.getByRole('status').filter({ hasText: 'Its signing secret, shown this once' }).waitFor();
      assert.match(await page.getByLabel('Signing secret').inputValue(), /^whsec_/);
      const row = page.getByRole('table', { name: 'Webhook endpoints' }).getByRole('row').filter({ hasText: url });
      await row.getByRole('cell', { name: 'payment.authorized, payment.captured' }).waitFor();
      await check(page, 'webhooks-added', w);

      // Its page: events and status, rotation, test event.
      await row.getByRole('link', { name: url }).click();
      await page.getByRole('heading', { name: 'Webhook endpoint' }).waitFor();
      await check(page, 'endpoint', w);
      await page.getByLabel('Status', { exact: true }).selectOption('disabled');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('status').filter({ hasText: 'The endpoint is saved.' }).waitFor();
      await page.getByText('Disabled', { exact: true }).first().waitFor();
      await page.getByRole('button', { name: 'Rotate the signing secret' }).click();
      await page.getByRole('status').filter({ hasText: 'The new signing secret (version 2), shown this once' }).waitFor();
      await page.getByText('(24 hours)', { exact: false }).waitFor();
      await check(page, 'endpoint-rotated', w);
      await page.getByRole('button', { name: 'Send a test event' }).click();
      await page.getByRole('heading', { name: 'Event webhook_endpoint.test' }).waitFor();
      await page.getByRole('status').filter({ hasText: 'The test event is made' }).waitFor();
      await check(page, 'test-event', w);

      // Delete, after the confirmation that names it.
      await page.goto(`${base}/dashboard/${a.entityId}/webhooks`);
      await page.getByRole('table', { name: 'Webhook endpoints' }).getByRole('link', { name: url }).click();
      await page.getByRole('link', { name: 'Delete this endpoint…' }).click();
      await page.getByRole('heading', { name: 'Delete the endpoint?' }).waitFor();
      await check(page, 'delete-confirmation', w);
      const endpointUrl = page.url().replace(/\/delete$/, '');
      await page.getByRole('button', { name: `Delete ${url}` }).click();
      await page.getByRole('status').filter({ hasText: 'The endpoint is deleted' }).waitFor();
      assert.equal(await page.getByRole('link', { name: url }).count(), 0);

      // Checkout origins.
      await page.getByRole('link', { name: 'Checkout origins' }).click();
      await page.getByRole('heading', { name: 'Checkout origins' }).waitFor();
      await check(page, 'origins-empty', w);
      await page.getByLabel('Origin', { exact: true }).fill('http://shop.example');
      await page.getByRole('button', { name: 'Add the origin' }).click();
      await page.getByRole('alert').filter({ hasText: 'Origin: must be https (http only for localhost)' }).waitFor();
      await check(page, 'origins-refused', w);
      await page.getByLabel('Origin', { exact: true }).fill('https://shop.example');
      await page.getByRole('button', { name: 'Add the origin' }).click();
      await page.getByRole('status').filter({ hasText: 'The origin is added' }).waitFor();
      await page.getByRole('list', { name: 'Checkout origins' }).locator('code', { hasText: 'https://shop.example' }).waitFor();
      await check(page, 'origins', w);
      await page.getByRole('button', { name: 'Remove https://shop.example' }).click();
      await page.getByRole('status').filter({ hasText: 'The origin is removed' }).waitFor();
      await page.context().close();

      // Another merchant's admin: nothing of A's.
      const other = await signedIn('bea@example.com', viewport);
      for (const path of [endpointUrl.slice(base.length), `/dashboard/${a.entityId}/webhooks`, `/dashboard/${a.entityId}/checkout-origins`]) {
        const res = await other.goto(`${base}${path}`);
        assert.equal(res!.status(), 404, path);
      }
      await other.context().close();
    });
  }
});
