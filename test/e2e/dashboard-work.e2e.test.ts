// The dashboard's working tools in headless Chromium (issue 43 item 3): an admin sets the
// merchant's time zone, searches payments by an amount range, downloads the search as CSV
// from the list's link, reads the request log, and opens a void's confirmation; another
// merchant's admin gets a 404 for these pages. The search box opens a payment by its id and
// finds payments by a customer's email and by a card's last four; a payment's page shows its
// card (brand, last four, expiry). On every page, at 375 px and at 1280 px:
// axe-core finds no violation at all (of any impact), and the page does not scroll
// sideways (document.documentElement.scrollWidth within the viewport's width).
// Screenshots under test-results/e2e/dashboard-work-*.png.
import { assertNoAxeViolations, assertNoSidewaysScroll, launchChromium } from '../helpers/browser.ts';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { type Browser, type Page } from 'playwright-core';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';

const SHOTS = 'test-results/e2e';
const PASSWORD = 'correct horse battery staple';
const VIEWPORTS = [{ width: 375, height: 812 }, { width: 1280, height: 800 }];
const CARD = { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' };

describe('the dashboard\'s working tools in Chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let a: Merchant;
  let b: Merchant;
  let toVoid: string;
  let mailed: string;
  let otherCard: string;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const port = await freePort();
    base = `http://localhost:${port}`;
    t = await createTestApp({ baseUrl: base });
    await t.app.listen({ port, host: '127.0.0.1' });
    a = await t.createMerchant('Shop with a rather long name, to test narrow screens');
    b = await t.createMerchant('Other shop');
    for (const [email, entity, role] of [['ada.lovelace.administrator@long-domain-name.example.com', a, 'admin'], ['bea@example.com', b, 'admin']] as const) {
      await t.app.inject({ method: 'POST', url: '/admin/v1/identity/users', headers: t.adminHeaders, payload: { email, password: PASSWORD } });
      const res = await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${entity.entityId}/members`, headers: t.adminHeaders, payload: { email, role } });
      assert.equal(res.statusCode, 201, res.body);
    }
    const pay = async (m: Merchant, reference: string, amount: number, key?: string, extra: { number?: string; email?: string } = {}) => {
      const res = await t.app.inject({
        method: 'POST', url: '/v2/payments', headers: { ...m.auth, ...(key ? { 'x-idempotency-key': key } : {}) },
        payload: {
          amount, currency: 'EUR', capture_mode: 'MANUAL', order: { reference }, ...(extra.email ? { customer: { email: extra.email } } : {}),
          split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: { ...CARD, ...(extra.number ? { number: extra.number } : {}) } }],
        },
      });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().id as string;
    };
    for (let i = 0; i < 4; i++) await pay(a, `SMALL-${i}`, 500 + i);
    await pay(a, '=cmd|" /C calc"!A0', 2500);
    await pay(a, 'BIG-ONE', 250000, 'e2e-idempotency-key-1');
    toVoid = await pay(a, 'VOID-ME', 12000);
    // For the search box (below the amount range of the first test: 7.77 and 8.88 EUR).
    mailed = await pay(a, 'MAIL-MC', 777, undefined, { number: '5555555555554444', email: 'lin.mail@example.com' });
    otherCard = await pay(a, 'MAIL-OTHER', 888, undefined, { number: '4000056655665556', email: 'other.person@example.com' });
    await pay(b, 'B-ONLY', 2500);
    await t.app.inject({ method: 'POST', url: '/v2/payments', headers: a.auth, payload: { amount: 0 } }); // a 400 for the log
    await t.app.requestLog.flush();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const check = async (page: Page, name: string, width: number) => {
    await assertNoAxeViolations(page, `${name} ${width}`);
    await assertNoSidewaysScroll(page, name, width);
    await page.screenshot({ path: `${SHOTS}/dashboard-work-${name}-${width}.png`, fullPage: true });
  };
  const signedIn = async (email: string, viewport: { width: number; height: number }) => {
    const context = await browser.newContext({ viewport, bypassCSP: true, acceptDownloads: true });
    const page = await context.newPage();
    await page.goto(`${base}/dashboard`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/dashboard\/[0-9a-f-]{36}$/);
    return page;
  };

  for (const viewport of VIEWPORTS) {
    it(`at ${viewport.width} px: time zone, amount range, CSV download, request log, void confirmation; axe finds nothing, nothing scrolls sideways`, async () => {
      const w = viewport.width;
      const page = await signedIn('ada.lovelace.administrator@long-domain-name.example.com', viewport);
      await check(page, 'home', w);

      // The time zone, on the Team page.
      const zone = w === 375 ? 'America/St_Johns' : 'Asia/Kolkata';
      await page.goto(`${base}/dashboard/${a.entityId}/team`);
      await page.getByLabel(/^Time zone of /).fill('Nowhere/Special');
      await page.getByRole('button', { name: 'Save the time zone' }).click();
      await page.getByRole('alert').filter({ hasText: 'Time zone: "Nowhere/Special" is not a time zone name' }).waitFor();
      await page.getByLabel(/^Time zone of /).fill(zone);
      await page.getByRole('button', { name: 'Save the time zone' }).click();
      await page.getByRole('status').filter({ hasText: `The time zone is saved: ${zone}.` }).waitFor();
      await check(page, 'team', w);
      const offset = w === 375 ? 'UTC-03:30' : 'UTC+05:30';
      await page.goto(`${base}/dashboard/${a.entityId}`);
      await page.locator('#chart-caption').filter({ hasText: `days in ${zone}` }).waitFor();

      // The list with an amount range, and its CSV.
      await page.goto(`${base}/dashboard/${a.entityId}/payments`);
      await page.getByLabel('Currency').selectOption('EUR');
      await page.getByLabel('Amount from').fill('10');
      await page.getByLabel('Amount to').fill('200.00');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.getByRole('table', { name: 'Payments' }).getByRole('link', { name: 'VOID-ME' }).waitFor();
      assert.equal(await page.getByRole('link', { name: 'SMALL-0' }).count(), 0, 'below the range');
      assert.equal(await page.getByRole('link', { name: 'BIG-ONE' }).count(), 0, 'above the range');
      assert.ok(await page.getByRole('cell', { name: offset }).first().isVisible(), 'dates in the merchant\'s zone');
      await check(page, 'payments', w);
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download these payments (CSV)' }).click()]);
      assert.match(download.suggestedFilename(), /^payments-\d{4}-\d{2}-\d{2}\.csv$/);
      const csv = readFileSync((await download.path())!, 'utf8');
      const lines = csv.trim().split('\r\n');
      assert.equal(lines[0], 'id,created_at,created_local,time_zone,order_reference,status,methods,partners,currency,amount,amount_minor,captured,captured_minor,refunded,refunded_minor,voided,voided_minor,card,customer_email');
      assert.equal(lines.length, 3, csv);
      assert.match(lines[1]!, new RegExp(`,${zone},VOID-ME,AUTHORIZED,CARD,card-sim,EUR,120\\.00,12000,`));
      assert.match(lines[2]!, /,"'=cmd\|"" \/C calc""!A0",AUTHORIZED,.*,25\.00,2500,/);
      assert.doesNotMatch(csv, /B-ONLY|SMALL-|BIG-ONE/);

      // The payment page and the void's confirmation.
      await page.goto(`${base}/dashboard/${a.entityId}/payments/${toVoid}`);
      await page.getByText(offset).first().waitFor();
      assert.equal(await page.locator('#payment-card').textContent(), 'VISA •••• 4242 (expires 12/31)');
      await check(page, 'payment', w);
      await page.getByRole('button', { name: 'Void…' }).click();
      await page.getByRole('heading', { name: 'Void 120.00 EUR?' }).waitFor();
      await page.getByText('Void the 120.00 EUR not captured of payment VOID-ME? This moves money at the partner and cannot be undone here.').waitFor();
      await check(page, 'void-confirmation', w);

      // The request log.
      await page.getByRole('link', { name: 'Requests' }).click();
      const log = page.getByRole('table', { name: 'Requests' });
      await log.getByRole('cell', { name: 'e2e-idempotency-key-1' }).waitFor();
      await log.getByRole('cell', { name: '400' }).first().waitFor();
      await check(page, 'requests', w);
      await page.getByLabel('Errors only (status 400 and above)').check();
      await page.getByRole('button', { name: 'Show' }).click();
      await page.waitForURL(/errors=1/);
      assert.equal(await log.getByRole('cell', { name: 'e2e-idempotency-key-1' }).count(), 0);
      await page.context().close();

      // Another merchant's admin: nothing of A's.
      const other = await signedIn('bea@example.com', viewport);
      for (const path of ['requests', 'payments.csv', 'team']) {
        const res = await other.goto(`${base}/dashboard/${a.entityId}/${path}`);
        assert.equal(res!.status(), 404, path);
      }
      await other.goto(`${base}/dashboard/${b.entityId}/requests`);
      await other.getByRole('table', { name: 'Requests' }).waitFor();
      assert.doesNotMatch(await other.content(), /e2e-idempotency-key-1/);
      await other.context().close();
    });
  }

  for (const viewport of VIEWPORTS) {
    it(`at ${viewport.width} px: the search box opens a payment by its id and finds payments by email and by last four; the payment page shows its card; axe finds nothing`, async () => {
      const w = viewport.width;
      const page = await signedIn('ada.lovelace.administrator@long-domain-name.example.com', viewport);
      const table = page.getByRole('table', { name: 'Payments' });
      const search = async (text: string) => {
        await page.goto(`${base}/dashboard/${a.entityId}/payments`);
        await page.getByLabel('Search (order reference, payment id, email, last four digits)').fill(text);
        await page.getByRole('button', { name: 'Search' }).click();
      };
      /** The list after a search: its rows' order references, once the search's page has loaded. */
      const results = async (text: string) => {
        await page.waitForURL((u) => u.pathname.endsWith('/payments') && u.searchParams.get('order_reference') === text);
        return table.locator('tbody tr td:nth-child(2)').allTextContents();
      };

      // A payment id (in capitals at 1280 px, as copied from some tools): its page opens, with its card.
      await search(w === 375 ? mailed : mailed.toUpperCase());
      await page.waitForURL(`${base}/dashboard/${a.entityId}/payments/${mailed}`);
      assert.equal(await page.locator('#payment-card').textContent(), 'MASTERCARD •••• 4444 (expires 12/31)');
      await check(page, 'search-by-id', w);

      // A customer's email (in other capitals): that customer's payment only.
      await search('Lin.Mail@EXAMPLE.com');
      assert.deepEqual(await results('Lin.Mail@EXAMPLE.com'), ['MAIL-MC']);
      await check(page, 'search-by-email', w);

      // A card's last four: the payments of that card only.
      await search('5556');
      assert.deepEqual(await results('5556'), ['MAIL-OTHER']);
      await check(page, 'search-by-last-four', w);
      await search('4242');
      const visa = await results('4242');
      assert.ok(visa.includes('VOID-ME') && visa.includes('BIG-ONE'), JSON.stringify(visa));
      assert.ok(!visa.includes('MAIL-MC') && !visa.includes('MAIL-OTHER') && !visa.includes('B-ONLY'), JSON.stringify(visa));

      // The other card's page: its brand and last four.
      await page.goto(`${base}/dashboard/${a.entityId}/payments/${otherCard}`);
      assert.equal(await page.locator('#payment-card').textContent(), 'VISA •••• 5556 (expires 12/31)');
      await page.context().close();
    });
  }
});
