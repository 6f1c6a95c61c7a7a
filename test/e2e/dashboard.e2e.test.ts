// The merchant dashboard in headless Chromium (issue 21): an operator signs in through
// payd's identity provider, finds a payment by its order reference, captures part of it,
// refunds, double-submits a refund that moves money once; a viewer cannot refund; a
// member of entity A cannot open entity B's payment by URL; an admin revokes an API key,
// sets the webhook endpoint and replays an event; a link made in the dashboard is paid by a
// shopper in a second browser context and its page shows the attempt; eligibility rules
// saved and a teammate invited; no serious accessibility
// violation (axe-core) on each page, at 375 px and at desktop width; screenshots of each
// page under test-results/e2e.
import { launchChromium } from '../helpers/browser.ts';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, type Page } from 'playwright-core';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';
import { FAST, type Receiver, startReceiver, waitFor } from '../webhooks/helpers.ts';

const SHOTS = 'test-results/e2e';
const PASSWORD = 'correct horse battery staple';
const VIEWPORTS = [{ width: 375, height: 812 }, { width: 1280, height: 800 }];

describe('merchant dashboard in Chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let a: Merchant;
  let b: Merchant;
  let paymentA: string;
  let paymentB: string;
  let rx: Receiver;
  const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const port = await freePort();
    base = `http://localhost:${port}`;
    t = await createTestApp({ ...FAST, baseUrl: base });
    await t.app.listen({ port, host: '127.0.0.1' });
    rx = await startReceiver();
    t.app.webhooks.dispatcher.start((err) => console.error(err));
    a = await t.createMerchant('Shop A');
    b = await t.createMerchant('Shop B');
    for (const [email, entity, role] of [['olga@example.com', a, 'operator'], ['vic@example.com', a, 'viewer'], ['bea@example.com', b, 'admin'], ['ada@example.com', a, 'admin']] as const) {
      await t.app.inject({ method: 'POST', url: '/admin/v1/identity/users', headers: t.adminHeaders, payload: { email, password: PASSWORD } });
      const res = await t.app.inject({ method: 'POST', url: `/admin/v1/entities/${entity.entityId}/members`, headers: t.adminHeaders, payload: { email, role } });
      assert.equal(res.statusCode, 201, res.body);
    }
    const pay = async (m: Merchant, reference: string, amount: number) => {
      const res = await t.app.inject({
        method: 'POST', url: '/v2/payments', headers: m.auth,
        payload: { amount, currency: 'EUR', capture_mode: 'MANUAL', order: { reference }, split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' } }] },
      });
      return res.json().id as string;
    };
    for (let i = 0; i < 5; i++) await pay(a, `OTHER-${i}`, 1000 + i);
    paymentA = await pay(a, 'ORDER-7731', 12000);
    paymentB = await pay(b, 'ORDER-B-1', 5000);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await rx?.close();
  });

  const audit = async (page: Page, name: string) => {
    await page.addScriptTag({ content: axeSource });
    const violations = await page.evaluate(async () => {
      const result = await (window as unknown as { axe: { run: () => Promise<{ violations: Array<{ id: string; impact: string; nodes: unknown[] }> }> } }).axe.run();
      return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
    });
    const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    assert.deepEqual(serious, [], `${name}: ${JSON.stringify(serious)}`);
  };
  const signedIn = async (email: string, viewport = VIEWPORTS[1]!) => {
    // bypassCSP only lets the test inject axe into the dashboard's strict-CSP pages.
    const context = await browser.newContext({ viewport, bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${base}/dashboard`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/dashboard\/[0-9a-f-]{36}$/);
    return page;
  };
  const ops = async (paymentId: string) =>
    (await t.testDb.db.query<{ kind: string; amount: string }>('SELECT kind, amount::text FROM payment_operations WHERE payment_id = $1 ORDER BY created_at', [paymentId])).rows;

  it('an operator finds a payment by order reference, captures part, refunds, and a double-submitted refund moves money once', async () => {
    const page = await signedIn('olga@example.com');
    await page.getByRole('link', { name: 'Payments', exact: true }).click();
    await page.getByLabel('Order reference').fill('ORDER-7731');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: 'ORDER-7731' }).click();
    await page.getByRole('heading', { name: 'Payment ORDER-7731' }).waitFor();

    await page.getByLabel(/^Amount \(EUR\), at most 120\.00 EUR/).fill('80.00');
    await page.getByRole('button', { name: 'Capture…' }).click();
    await page.getByRole('heading', { name: 'Capture 80.00 EUR?' }).waitFor();
    await page.getByRole('button', { name: 'Yes, capture' }).click();
    await page.getByText('Capture done.').waitFor();
    assert.deepEqual(await ops(paymentA), [{ kind: 'CAPTURE', amount: '8000' }]);

    await page.getByLabel(/^Amount \(EUR\), at most 80\.00 EUR/).fill('30.00');
    await page.getByRole('button', { name: 'Refund…' }).click();
    await page.getByRole('heading', { name: 'Refund 30.00 EUR?' }).waitFor();
    // The confirmation posted twice (a double click that gets through, a resubmitted
    // form): the same form key, one refund.
    const confirm = page.locator('form.confirm');
    const fields = Object.fromEntries(await confirm.locator('input[type=hidden]').evaluateAll((els) => els.map((el) => [(el as HTMLInputElement).name, (el as HTMLInputElement).value])));
    const action = await confirm.getAttribute('action');
    const both = await Promise.all([0, 1].map(() => page.evaluate(async ({ action, fields }) => (await fetch(action!, { method: 'POST', body: new URLSearchParams(fields), redirect: 'manual' })).type, { action, fields })));
    assert.equal(both.length, 2);
    await page.goto(`${base}/dashboard/${a.entityId}/payments/${paymentA}`);
    assert.deepEqual(await ops(paymentA), [{ kind: 'CAPTURE', amount: '8000' }, { kind: 'REFUND', amount: '3000' }], 'one refund');
    await page.getByText('Refund of 30.00 EUR asked by olga@example.com (dashboard)').waitFor();
    await audit(page, 'payment detail');
    await page.screenshot({ path: `${SHOTS}/dashboard-payment-desktop.png`, fullPage: true });
    await page.context().close();
  });

  it('a viewer sees the payment without actions; a user of A gets a 404 for B\'s payment; every page passes axe at 375 px and desktop', async () => {
    for (const viewport of VIEWPORTS) {
      const page = await signedIn('vic@example.com', viewport);
      await audit(page, `home ${viewport.width}`);
      await page.screenshot({ path: `${SHOTS}/dashboard-home-${viewport.width}.png`, fullPage: true });
      await page.goto(`${base}/dashboard/${a.entityId}/payments`);
      await page.getByRole('table', { name: 'Payments' }).waitFor();
      await audit(page, `payments ${viewport.width}`);
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `no sideways scroll at ${viewport.width}`);
      await page.screenshot({ path: `${SHOTS}/dashboard-payments-${viewport.width}.png`, fullPage: true });
      await page.goto(`${base}/dashboard/${a.entityId}/payments/${paymentA}`);
      await page.getByText('Your role is read only.').waitFor();
      assert.equal(await page.getByRole('button', { name: /Refund/ }).count(), 0);
      await audit(page, `payment (viewer) ${viewport.width}`);
      await page.screenshot({ path: `${SHOTS}/dashboard-payment-viewer-${viewport.width}.png`, fullPage: true });
      const other = await page.goto(`${base}/dashboard/${a.entityId}/payments/${paymentB}`);
      assert.equal(other!.status(), 404);
      const otherEntity = await page.goto(`${base}/dashboard/${b.entityId}/payments/${paymentB}`);
      assert.equal(otherEntity!.status(), 404);
      assert.doesNotMatch(await page.content(), /ORDER-B-1/);
      await page.context().close();
    }
  });

  it('an admin creates a payment link and an API key; both pages pass axe at 375 px and desktop', async () => {
    for (const viewport of VIEWPORTS) {
      const page = await signedIn('ada@example.com', viewport);
      await page.getByRole('link', { name: 'Payment links' }).click();
      await page.getByLabel('Amount').fill('19.90');
      await page.getByLabel('Order reference').fill(`LINK-${viewport.width}`);
      await page.getByRole('button', { name: 'Create the link' }).click();
      await page.getByText('The link is created').waitFor();
      await page.getByRole('cell', { name: `LINK-${viewport.width}` }).waitFor();
      await audit(page, `links ${viewport.width}`);
      await page.screenshot({ path: `${SHOTS}/dashboard-links-${viewport.width}.png`, fullPage: true });
      await page.getByRole('link', { name: 'Developers' }).click();
      await page.getByRole('button', { name: 'Create an API key' }).click();
      const key = await page.getByRole('textbox', { name: 'API key' }).inputValue();
      assert.match(key, /^payd_sk_/);
      await audit(page, `developers ${viewport.width}`);
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `no sideways scroll at ${viewport.width}`);
      await page.screenshot({ path: `${SHOTS}/dashboard-developers-${viewport.width}.png`, fullPage: true });
      await page.context().close();
    }
  });

  it('an admin revokes a key, makes a link that a shopper pays in another browser, sets the webhook endpoint and replays the link\'s event', async () => {
    for (const viewport of VIEWPORTS) {
      const page = await signedIn('ada@example.com', viewport);
      const entity = a.entityId;
      await page.goto(`${base}/dashboard/${entity}/developers`);
      await page.getByRole('button', { name: 'Create an API key' }).click();
      const key = await page.getByRole('textbox', { name: 'API key' }).inputValue();
      const prefix = key.slice(0, 'payd_sk_'.length + 4);
      const row = page.getByRole('row').filter({ hasText: prefix });
      await row.getByRole('button', { name: 'Revoke' }).click();
      await page.getByText('The key is revoked').waitFor();
      const token = await fetch(`${base}/oauth/token`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials' });
      assert.equal(token.status, 401, 'a revoked key gets no token');

      // The page adds endpoints (each receives every event it takes): the previous width's one goes first, so that each event arrives once.
      const existing = (await t.app.inject({ url: '/v2/webhook-endpoints', headers: a.auth })).json() as { data: Array<{ id: string }> };
      for (const e of existing.data) assert.equal((await t.app.inject({ method: 'DELETE', url: `/v2/webhook-endpoints/${e.id}`, headers: a.auth })).statusCode, 204);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByLabel('Endpoint URL (https)').fill(`${rx.url}/hooks`);
      await page.getByRole('button', { name: /endpoint/ }).first().click();
      await page.getByRole('status').filter({ hasText: /endpoint is saved/ }).waitFor();
      await audit(page, `webhooks ${viewport.width}`);
      await page.screenshot({ path: `${SHOTS}/dashboard-webhooks-${viewport.width}.png`, fullPage: true });

      const reference = `SHOPPER-${viewport.width}`;
      await page.getByRole('link', { name: 'Payment links' }).click();
      await page.getByLabel('Amount').fill('42.00');
      await page.getByLabel('Order reference').fill(reference);
      await page.getByRole('button', { name: 'Create the link' }).click();
      await page.getByText('The link is created').waitFor();
      const customerUrl = await page.getByRole('row').filter({ hasText: reference }).getByRole('textbox').inputValue();

      // The shopper: another browser context, no dashboard cookie.
      const shopper = await (await browser.newContext({ viewport: VIEWPORTS[0] })).newPage();
      await shopper.goto(customerUrl);
      const payWith = async (number: string) => {
        // The card fields are in payd's card frame (docs/checkout.md), with the Pay button.
        const card = shopper.frameLocator('iframe.payd-frame');
        await card.getByLabel('Card number', { exact: true }).fill(number);
        await card.getByLabel('Expiry date (MM/YY)').fill('12/31');
        await card.getByLabel('Security code (CVV)').fill('123');
        await card.getByLabel('Name on card').fill('Sam Shopper');
        await shopper.getByRole('button', { name: /^Pay/ }).click();
      };
      await payWith('4000 0000 0000 0002');
      await shopper.getByRole('alert').filter({ hasText: 'Your payment was declined' }).waitFor();
      await payWith('4242 4242 4242 4242');
      const linkId = new URL(customerUrl).pathname.split('/').pop()!;
      await waitFor(async () => (await t.testDb.db.query(`SELECT 1 FROM payment_links WHERE id = $1 AND status = 'PAID'`, [linkId])).rows.length === 1, 20_000, 'the link to be paid');
      await shopper.screenshot({ path: `${SHOTS}/dashboard-link-shopper-${viewport.width}.png`, fullPage: true });
      await shopper.context().close();

      await page.goto(`${base}/dashboard/${entity}/links/${linkId}`);
      await page.getByRole('cell', { name: 'AUTHORIZED' }).waitFor();
      await page.getByRole('cell', { name: 'REFUSED' }).waitFor();
      await page.getByText('PAID').first().waitFor();
      await audit(page, `link ${viewport.width}`);
      await page.screenshot({ path: `${SHOTS}/dashboard-link-${viewport.width}.png`, fullPage: true });

      // The link's paid event, replayed from its page.
      const event = (await t.testDb.db.query<{ id: string }>(`SELECT id FROM webhook_events WHERE subject_id = $1 AND type = 'payment_link.paid'`, [linkId])).rows[0]!;
      await waitFor(() => rx.requests.some((r) => JSON.parse(r.body).id === event.id), 20_000, 'the event to arrive');
      await page.goto(`${base}/dashboard/${entity}/webhooks/${event.id}`);
      await page.getByRole('button', { name: 'Replay this event' }).click();
      await page.getByText('Replayed: a new delivery is on its way.').waitFor();
      await waitFor(() => rx.requests.filter((r) => JSON.parse(r.body).id === event.id).length === 2, 20_000, 'the replay to arrive');
      await page.reload();
      await page.getByRole('heading', { name: /^Replay of / }).waitFor();
      await audit(page, `webhook event ${viewport.width}`);
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `no sideways scroll at ${viewport.width}`);
      await page.screenshot({ path: `${SHOTS}/dashboard-webhook-event-${viewport.width}.png`, fullPage: true });

      await page.getByRole('link', { name: 'Eligibility' }).click();
      await page.getByLabel(/^Rules \(JSON/).fill(JSON.stringify([{ partner: 'bnpl-sim', billing_countries: { allow: ['FR'] } }]));
      await page.getByRole('button', { name: 'Save the rules' }).click();
      await page.getByRole('cell', { name: 'billing country in FR' }).waitFor();
      await audit(page, `eligibility ${viewport.width}`);
      await page.screenshot({ path: `${SHOTS}/dashboard-eligibility-${viewport.width}.png`, fullPage: true });
      await page.getByRole('link', { name: 'Team' }).click();
      await page.getByLabel('Email').fill(`clerk-${viewport.width}@example.com`);
      await page.getByRole('button', { name: 'Invite' }).click();
      await page.getByRole('cell', { name: `clerk-${viewport.width}@example.com`, exact: true }).waitFor();
      await audit(page, `team ${viewport.width}`);
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `no sideways scroll at ${viewport.width}`);
      await page.screenshot({ path: `${SHOTS}/dashboard-team-${viewport.width}.png`, fullPage: true });
      await page.context().close();
    }
  });
});
