// Card data never touches the merchant's page (issue 42), in headless Chromium: the
// merchant's page is on ANOTHER SITE than payd (http://shop.test and http://pay.example,
// both mapped to 127.0.0.1 by Chromium's --host-resolver-rules). A script of the
// merchant's page (the "spy") reads everything it can (its DOM, input values, open
// shadow roots, frames it can reach, every message posted to its window, every key and
// input event it can hear) and finds no card digit and no CVC, while payments go through:
// a card, a decline then another card, a gift card typed with spaces plus a card, a
// 3-D Secure challenge in a modal on the merchant's page (failed, then another card;
// approved), buy-now-pay-later with the email asked in the widget, and keyboard only.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { type Browser, type FrameLocator, type Page, chromium } from 'playwright-core';
import { assertNoAxeViolations } from '../helpers/browser.ts';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';
import { poll } from '../helpers/wait.ts';
import { hasMessage, t as text } from '../../src/web/i18n.ts';

const SHOTS = 'test-results/e2e';
const CVC = '987';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--host-resolver-rules=MAP pay.example 127.0.0.1, MAP shop.test 127.0.0.1'];

// What the merchant's page script can observe: installed before the widget loads.
const SPY = `
window.__seen = { messages: [], keys: [], changes: [] };
window.addEventListener('message', (e) => { try { window.__seen.messages.push(JSON.stringify(e.data)); } catch { window.__seen.messages.push(String(e.data)); } }, true);
for (const type of ['keydown', 'keyup', 'input', 'paste', 'change']) document.addEventListener(type, (e) => window.__seen.keys.push(type + ':' + (e.key || '') + ':' + (e.target && 'value' in e.target ? e.target.value : '')), true);
window.__harvest = () => {
  const out = [document.documentElement.outerHTML, document.title];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if ('value' in el && typeof el.value === 'string') out.push(el.value);
      for (const a of el.getAttributeNames()) out.push(el.getAttribute(a));
      if (el.shadowRoot) { out.push(el.shadowRoot.innerHTML); walk(el.shadowRoot); }
      if (el.tagName === 'IFRAME') {
        let doc = null;
        try { doc = el.contentDocument; } catch {}
        if (doc) { out.push(doc.documentElement.outerHTML); walk(doc); }
      }
    }
  };
  walk(document);
  for (let i = 0; i < window.frames.length; i++) {
    try { out.push(window.frames[i].document.documentElement.outerHTML); } catch {}
  }
  return { dom: out.join('\\n'), messages: window.__seen.messages, keys: window.__seen.keys, changes: window.__seen.changes,
    inputs: Array.from(document.querySelectorAll('input')).map((i) => i.value) };
};`;

describe('secure card fields on a merchant page of another site, in Chromium', () => {
  let t: TestApp;
  let m: Merchant;
  let payd: string;
  let shop: string;
  let shopServer: http.Server;
  let browser: Browser;
  let jwks: ReturnType<typeof createLocalJWKSet>;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const port = await freePort();
    payd = `http://pay.example:${port}`;
    t = await createTestApp({ baseUrl: payd });
    await t.app.listen({ port, host: '127.0.0.1' });
    m = await t.createMerchant('Secure shop');
    jwks = createLocalJWKSet((await t.app.inject({ url: '/v2/signing-jwks', headers: { 'x-api-key': m.apiKey } })).json());

    // The merchant: /checkout?amount=...&style=1 creates a session and mounts the widget; /return verifies the token.
    shopServer = http.createServer(async (req, res) => {
      const url = new URL(req.url!, shop);
      const html = (body: string) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title></head><body><main>${body}</main></body></html>`);
      };
      if (url.pathname === '/checkout') {
        const s = await t.app.inject({
          method: 'POST', url: '/v2/client-sessions', headers: m.auth,
          payload: { amount: Number(url.searchParams.get('amount') ?? 2500), currency: 'EUR', shopper_redirection_url: `${shop}/return`, order: { reference: 'sf-1' } },
        });
        const data = s.json().widget.data as string;
        const style = (url.searchParams.get('style') ? ', style: { borderColor: "rgb(200, 0, 120)", fontFamily: "Georgia, serif", borderRadius: "2px" }' : '')
          + (url.searchParams.get('threeDs') === 'redirect' ? ', threeDs: "redirect"' : '')
          + (url.searchParams.get('locale') ? `, locale: ${JSON.stringify(url.searchParams.get('locale'))}` : '');
        return html(`<h1>Checkout</h1><div id="pay"></div><script>${SPY}; addEventListener('pageshow', (e) => (window.__shows ??= []).push(e.persisted));</script><script src="${payd}/checkout/widget.js"></script>
<script>PaydCheckout.mount('#pay', { data: ${JSON.stringify(data)}, onChange: (s) => window.__seen.changes.push(JSON.stringify(s)),
  onReady: () => { const f = document.querySelector('form.payd-form'); (window.__ready ??= []).push(!!f && !f.hidden && !f.inert && getComputedStyle(f).opacity === '1' && !!f.querySelector('iframe.payd-frame')); }${style} });</script>`);
      }
      if (url.pathname === '/return') {
        try {
          const { payload } = await jwtVerify(url.searchParams.get('service-redirection-data') ?? '', jwks, { issuer: payd, audience: m.entityId });
          return html(`<h1 id="result">verified ${payload.authorization_status} ${payload.client_session_status}</h1>`);
        } catch (err) {
          return html(`<h1 id="result">not verified: ${(err as Error).message}</h1>`);
        }
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => shopServer.listen(0, '127.0.0.1', r));
    shop = `http://shop.test:${(shopServer.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ARGS });
  });
  after(async () => {
    await browser?.close();
    await new Promise((r) => shopServer?.close(r));
    await t?.close();
  });

  const open = async (query = '', viewport = { width: 390, height: 844 }) => {
    const page = await browser.newPage({ viewport });
    await page.goto(`${shop}/checkout${query}`);
    const card = page.frameLocator('iframe[title="Card details"]');
    // The frame writes its fields before the widget shows its form: both, and the fields
    // typeable (read-only until the frame has the credential, which follows the form's showing).
    await Promise.all([card.locator('input[autocomplete="cc-number"]:not([readonly])').waitFor(), page.locator('form.payd-form:not([inert])').waitFor()]);
    return { page, card };
  };
  const fill = async (card: FrameLocator, number: string, cvc = CVC) => {
    await card.getByLabel('Card number', { exact: true }).fill(number);
    await card.getByLabel('Expiry date (MM/YY)').fill('12/31');
    await card.getByLabel('Security code (CVV)').fill(cvc);
    await card.getByLabel('Name on card').fill('Ada Shopper');
  };
  const payButton = (page: Page) => page.getByRole('button', { name: /^Pay/ });
  const result = async (page: Page) => {
    await page.waitForURL(/\/return\?/, { timeout: 15_000 });
    return page.locator('#result').textContent();
  };
  /** What the merchant's scripts saw holds no card number (in any grouping) and no CVC. */
  const assertNothingSeen = async (page: Page, numbers: string[]) => {
    const seen = await page.evaluate(() => (window as unknown as { __harvest: () => { dom: string; messages: string[]; keys: string[]; changes: string[]; inputs: string[] } }).__harvest());
    for (const n of numbers) {
      const digits = n.replace(/\D/g, '');
      for (const form of [digits, n, digits.slice(6, 12), digits.slice(-4) + CVC]) {
        for (const [where, text] of Object.entries({ dom: seen.dom, messages: seen.messages.join('\n'), keys: seen.keys.join('\n'), changes: seen.changes.join('\n') })) {
          assert.ok(!text.includes(form), `the merchant page's ${where} holds ${form}`);
        }
      }
    }
    // The CVC as a value of its own: three digits also occur inside ids (hex uuids, session data) by chance.
    const asValue = new RegExp(`(^|[^0-9A-Za-z])${CVC}([^0-9A-Za-z]|$)`);
    assert.ok(!seen.inputs.some((v) => asValue.test(v)), 'no input of the merchant page holds the CVC');
    assert.ok(!seen.messages.some((x) => asValue.test(x)), 'no message to the merchant page holds the CVC');
    assert.deepEqual(seen.keys.filter((k) => /[0-9]/.test(k)), [], 'no keystroke of the card fields reaches the merchant page');
    return seen;
  };

  it('pays by card: the merchant page sees events (brand, complete) and no card digit or CVC; styling applies inside the frame', async () => {
    const { page, card } = await open('?style=1');
    await card.getByLabel('Card number', { exact: true }).pressSequentially('4242424242424242');
    assert.equal(await card.getByLabel('Card number', { exact: true }).inputValue(), '4242 4242 4242 4242');
    await card.getByText('Visa', { exact: true }).waitFor();
    await card.getByLabel('Expiry date (MM/YY)').pressSequentially('1231');
    await card.getByLabel('Security code (CVV)').pressSequentially(CVC);
    await card.getByLabel('Name on card').fill('Ada Shopper');
    for (const [label, autocomplete] of [['Card number', 'cc-number'], ['Expiry date (MM/YY)', 'cc-exp'], ['Security code (CVV)', 'cc-csc'], ['Name on card', 'cc-name']] as const) {
      assert.equal(await card.getByLabel(label, { exact: true }).getAttribute('autocomplete'), autocomplete, 'browsers still autofill');
    }
    const border = await card.getByLabel('Card number', { exact: true }).evaluate((el) => [getComputedStyle(el).borderTopColor, getComputedStyle(el).fontFamily, getComputedStyle(el).borderTopLeftRadius]);
    assert.deepEqual(border, ['rgb(200, 0, 120)', 'Georgia, serif', '2px'], 'the mount\'s style options reach inside the frame');
    await page.screenshot({ path: `${SHOTS}/secure-fields-form.png`, fullPage: true });
    const seen = await assertNothingSeen(page, ['4242 4242 4242 4242']);
    const last = JSON.parse(seen.changes.at(-1)!);
    assert.deepEqual(last, { brand: 'Visa', empty: false, complete: { number: true, expiry: true, cvc: true } });
    // The frame is payd's, another site: the merchant's script cannot reach into it.
    assert.equal(await page.evaluate(() => (document.querySelector('iframe') as HTMLIFrameElement).contentDocument), null);
    await payButton(page).click();
    await page.waitForURL(/\/return\?/);
    assert.equal(await page.locator('#result').textContent(), 'verified AUTHORIZED SUBMITTED');
    await page.close();
  });

  it('requests the card frame at mount, while the session is read; the frame writes its fields (in the mount\'s style) meanwhile, hidden; it pays through it', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    let frameRequested!: () => void;
    const frameSeen = new Promise<void>((resolve) => { frameRequested = resolve; });
    page.on('request', (r) => { if (new URL(r.url()).pathname === '/checkout/card-frame') frameRequested(); });
    // The card frame as it is while the session read is held: its fields, their look, its language (up to 5 s for the fields).
    const frameNow = async () => {
      const frame = page.frames().find((f) => f.url().includes('/checkout/card-frame'));
      return frame?.evaluate(() => {
        const number = document.querySelector<HTMLInputElement>('input[autocomplete="cc-number"]');
        return {
          fields: document.querySelectorAll('input[autocomplete^="cc-"]').length, border: number ? getComputedStyle(number).borderTopColor : '', lang: document.documentElement.lang,
          readOnly: Array.from(document.querySelectorAll('input')).every((i) => i.readOnly),
        };
      }).catch(() => undefined);
    };
    // The session read is held until the frame has been requested and has written its fields (or 5 s have gone by).
    let held: { frameFirst: boolean; frameHidden: boolean; fields: number; frame: Awaited<ReturnType<typeof frameNow>> } | undefined;
    await page.route(/\/checkout\/v1\/session(\?|$)/, async (route) => {
      const frameFirst = await Promise.race([frameSeen.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);
      const frame = await poll(frameNow, (f) => !!f?.fields, { withinMs: 5000, everyMs: 100 });
      // Out of sight and reach: the form around the frame transparent and inert (laid out, so the frame renders meanwhile).
      const frameHidden = await page.locator('iframe.payd-frame').evaluate((f) => {
        const form = f.closest('form');
        return !!form && form.inert && getComputedStyle(form).opacity === '0';
      });
      held ??= { frameFirst, frameHidden, fields: await page.getByRole('button', { name: /^Pay/ }).count(), frame };
      await route.continue();
    });
    await page.goto(`${shop}/checkout?style=1`);
    const card = page.frameLocator('iframe[title="Card details"]');
    await Promise.all([card.getByLabel('Card number', { exact: true }).waitFor(), page.locator('form.payd-form:not([inert])').waitFor()]);
    assert.deepEqual(held, { frameFirst: true, frameHidden: true, fields: 0, frame: { fields: 4, border: 'rgb(200, 0, 120)', lang: 'en', readOnly: true } },
      'the frame was requested before the session answered, hidden meanwhile, and wrote its fields in the mount\'s style without waiting for the session');
    const editable = await poll(() => card.getByLabel('Card number', { exact: true }).isEditable(), (e) => e, { withinMs: 5000, everyMs: 100 });
    assert.equal(editable, true, 'typeable once the widget shows the form (and gives the frame the credential)');
    await page.waitForFunction(() => (window as unknown as { __ready?: boolean[] }).__ready?.length);
    assert.deepEqual(await page.evaluate(() => (window as unknown as { __ready?: boolean[] }).__ready), [true], 'onReady: once, the form shown with its card frame');
    await fill(card, '4242 4242 4242 4242');
    await payButton(page).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    await page.close();
  });

  it('after paying, Back to the merchant\'s page restored from the back/forward cache shows the session paid, not a form', async () => {
    // Playwright turns the cache off by default (--disable-back-forward-cache); a browser of its own with it on, as shoppers have it.
    const cached = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ARGS, ignoreDefaultArgs: ['--disable-back-forward-cache'] });
    try {
      const page = await cached.newPage({ viewport: { width: 390, height: 844 } });
      await page.goto(`${shop}/checkout`);
      const card = page.frameLocator('iframe[title="Card details"]');
      await Promise.all([card.locator('input[autocomplete="cc-number"]:not([readonly])').waitFor(), page.locator('form.payd-form:not([inert])').waitFor()]);
      await fill(card, '4242 4242 4242 4242');
      await payButton(page).click();
      assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
      // A page restored from the cache fires no load event: the navigation is waited for until it commits.
      await page.goBack({ waitUntil: 'commit' });
      const shows = await poll(() => page.evaluate(() => (window as unknown as { __shows?: boolean[] }).__shows ?? []).catch(() => []), (v) => v.length > 1, { withinMs: 10_000 });
      assert.deepEqual(shows, [false, true], 'the page came back from the back/forward cache');
      await page.getByRole('status').filter({ hasText: text('en', 'alreadyPaid') }).waitFor({ timeout: 10_000 });
      assert.equal(await page.locator('form.payd-form').count(), 0, 'no form to pay again');
      assert.equal(await page.getByRole('link', { name: text('en', 'returnToMerchant') }).count(), 1);
    } finally {
      await cached.close();
    }
  });

  it('says a decline in place; the brand and the number leave the emptied field; another card pays in the same session', async () => {
    const { page, card } = await open();
    await fill(card, '4000 0000 0000 0002');
    await card.getByText('Visa', { exact: true }).waitFor();
    await payButton(page).click();
    await page.getByRole('alert').filter({ hasText: 'Your payment was declined, and no money was taken.' }).waitFor();
    assert.match(page.url(), /shop\.test.*\/checkout/, 'the shopper stays on the merchant\'s page');
    assert.equal(await card.getByLabel('Card number', { exact: true }).inputValue(), '', 'the declined number left the field');
    assert.equal(await card.getByLabel('Security code (CVV)').inputValue(), '');
    assert.equal(await card.getByText('Visa', { exact: true }).count(), 0, 'no brand under an emptied field');
    await assertNothingSeen(page, ['4000 0000 0000 0002']);
    await fill(card, '5555 5555 5555 4444');
    await card.getByText('Mastercard', { exact: true }).waitFor();
    await card.getByLabel('Card number', { exact: true }).fill('');
    await card.getByLabel('Card number', { exact: true }).dispatchEvent('input');
    assert.equal(await card.getByText('Mastercard', { exact: true }).count(), 0, 'emptied by the shopper: no brand either');
    await fill(card, '5555 5555 5555 4444');
    await payButton(page).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    await page.close();
  });

  it('says why the issuer declined when the answer carries decline_reason, else the generic text', async () => {
    const { page, card } = await open();
    // The answer as a later payd gives it (decline_reason is the lead's server-side change): added on the way.
    let reason = 'expired_card';
    await page.route('**/checkout/v1/session/payments', async (route) => {
      const res = await route.fetch({ url: route.request().url().replace('pay.example', '127.0.0.1') }); // Node does not resolve pay.example
      await route.fulfill({ response: res, json: { ...(await res.json()), decline_reason: reason } });
    });
    await fill(card, '4000 0000 0000 0069');
    await payButton(page).click();
    const key: string = 'decline_expired_card';
    const expected = hasMessage(key) ? text('en', key) : text('en', 'declined');
    await page.getByRole('alert').filter({ hasText: expected }).waitFor();
    reason = 'a_reason_without_text';
    await fill(card, '4000 0000 0000 0002');
    await payButton(page).click();
    await page.getByRole('alert').filter({ hasText: `${text('en', 'declined')} ${text('en', 'tryAnother')}` }).waitFor();
    await page.close();
  });

  it('shows an error next to the field and clears it as soon as the field is valid, before the next submit', async () => {
    const { page, card } = await open();
    await fill(card, '4242 4242 4242 4241');
    await card.getByLabel('Expiry date (MM/YY)').fill('01/20');
    await payButton(page).click();
    await card.getByText('This card number is not valid').waitFor();
    await card.getByText('This card has expired').waitFor();
    assert.equal(await card.getByLabel('Card number', { exact: true }).getAttribute('aria-invalid'), 'true');
    const focused = page.frames().find((f) => f.url().includes('/checkout/card-frame'))!;
    assert.equal(await focused.evaluate(() => document.activeElement?.getAttribute('autocomplete')), 'cc-number', 'focus moves to the first error');
    await card.getByLabel('Card number', { exact: true }).fill('4242 4242 4242 4242');
    await card.getByText('This card number is not valid').waitFor({ state: 'detached' });
    assert.equal(await card.getByLabel('Card number', { exact: true }).getAttribute('aria-invalid'), null);
    await card.getByLabel('Expiry date (MM/YY)').fill('12/31');
    await card.getByText('This card has expired').waitFor({ state: 'detached' });
    await payButton(page).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    await page.close();
  });

  it('splits between a gift card typed with spaces and a card', async () => {
    const { page, card } = await open('?amount=6000');
    await page.getByLabel('Pay part with a gift card').check();
    await page.getByLabel('Gift card number').pressSequentially('6000 0000 0055 5555');
    assert.equal(await page.getByLabel('Gift card number').inputValue(), '6000 0000 0055 5555');
    await page.getByLabel(/Amount from the gift card/).fill('20.00');
    await fill(card, '4242 4242 4242 4242');
    await payButton(page).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    const { rows } = await t.testDb.db.query<{ method: string; amount: number }>(
      `SELECT t.method, t.amount FROM partner_transactions t JOIN payments p ON p.id = t.payment_id
        WHERE p.entity_id = $1 AND p.amount = 6000 AND t.kind = 'AUTHORIZATION' ORDER BY t.seq`, [m.entityId]);
    assert.deepEqual(rows.map((r) => [r.method, Number(r.amount)]), [['GIFT_CARD', 2000], ['CARD', 4000]]);
    await page.close();
  });

  it('runs 3-D Secure in a modal on the merchant\'s page: a failed check leaves the shopper there to try another card; an approved one pays', async () => {
    const { page, card } = await open();
    await fill(card, '4000 0000 0000 3220');
    await payButton(page).click();
    const dialog = page.getByRole('dialog', { name: 'Confirm the payment with your bank' });
    await dialog.waitFor();
    const acs = page.frameLocator('dialog iframe');
    await acs.getByRole('button', { name: 'Fail authentication' }).waitFor();
    assert.match(page.url(), /shop\.test.*\/checkout/, 'the challenge is on the merchant\'s page');
    // Escape goes where the focus is: on the dialog of the merchant's page (the shopper
    // clicked beside the bank's page), not in the bank's frame, where the dialog never hears it.
    await dialog.evaluate((d) => {
      const seen: string[] = [];
      (window as unknown as { __dialogEvents: string[] }).__dialogEvents = seen;
      for (const type of ['cancel', 'close']) d.addEventListener(type, () => seen.push(type));
    });
    await dialog.locator('.payd-3ds-title').click();
    assert.deepEqual(await page.evaluate(() => [document.activeElement?.tagName, document.activeElement?.className]), ['DIALOG', 'payd-3ds'],
      'focus is on the dialog, in the merchant\'s page');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Escape');
    // Each Escape is a cancel (refused) or a close (the dialog opens again while the challenge lasts): wait for both, and the dialog open.
    const after = await poll(() => page.evaluate(() => {
      const d = document.querySelector<HTMLDialogElement>('dialog.payd-3ds');
      return { open: !!d?.open && d.matches(':modal'), heard: (window as unknown as { __dialogEvents: string[] }).__dialogEvents.length };
    }), (v) => v.open && v.heard >= 2, { withinMs: 5000 });
    assert.ok(after.heard >= 2, `both Escapes reached the dialog: ${JSON.stringify(after)}`);
    assert.equal(after.open, true, 'Escape does not leave the challenge half done');
    await page.screenshot({ path: `${SHOTS}/secure-fields-3ds-modal.png`, fullPage: true });
    await acs.getByRole('button', { name: 'Fail authentication' }).click();
    await page.getByRole('alert').filter({ hasText: 'Your payment was declined' }).waitFor();
    await dialog.waitFor({ state: 'detached' });
    assert.match(page.url(), /shop\.test.*\/checkout/, 'still on the merchant\'s page, same session');
    await assertNothingSeen(page, ['4000 0000 0000 3220']);
    await fill(card, '4000 0000 0000 3220');
    await payButton(page).click();
    await acs.getByRole('button', { name: 'Approve the payment' }).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    await page.close();
  });

  it('with threeDs: redirect, leaves for the bank\'s page and comes back through payd (here over http, where the browser sends no Sec-Fetch-Dest)', async () => {
    const { page, card } = await open('?threeDs=redirect');
    await fill(card, '4000 0000 0000 3220');
    await payButton(page).click();
    await page.waitForURL(/pay\.example.*\/sim\/acs\//);
    await page.getByRole('button', { name: 'Approve the payment' }).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    await page.close();
  });

  it('speaks the mount\'s locale option in the 3-D Secure modal (the bank\'s page and payd\'s return page), in an English browser', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 }, locale: 'en-US' });
    await page.goto(`${shop}/checkout?locale=fr`);
    const card = page.frameLocator('iframe.payd-frame');
    await Promise.all([card.locator('input[autocomplete="cc-number"]:not([readonly])').waitFor(), page.locator('form.payd-form:not([inert])').waitFor()]);
    await card.locator('input[autocomplete="cc-number"]').fill('4000 0000 0000 3220');
    await card.locator('input[autocomplete="cc-exp"]').fill('12/31');
    await card.locator('input[autocomplete="cc-csc"]').fill(CVC);
    await card.locator('input[autocomplete="cc-name"]').fill('Ada Shopper');
    await page.locator('button.payd-pay').click();
    await page.getByRole('dialog', { name: text('fr', 'threeDsTitle') }).waitFor();
    const acs = page.frameLocator('dialog iframe');
    const approve = acs.getByRole('button', { name: text('fr', 'acsApprove') });
    await approve.waitFor({ timeout: 10_000 }).catch(async () => {
      assert.fail(`the bank's page is not French: ${await acs.locator('h1').textContent()}`);
    });
    const bank = page.frames().find((f) => new URL(f.url()).pathname.startsWith('/sim/acs/'))!;
    assert.equal(await bank.evaluate(() => document.documentElement.lang), 'fr', 'the bank\'s page is French');
    const back = page.waitForResponse((r) => new URL(r.url()).pathname.startsWith('/checkout/3ds-return/'));
    await approve.click();
    const done = await back;
    assert.equal(done.headers()['content-language'], 'fr', 'payd\'s 3-D Secure return page (3ds-done) is French');
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    await page.close();
  });

  it('asks the shopper\'s email for buy-now-pay-later when the session has none, and pays', async () => {
    const { page } = await open('?amount=6000');
    await page.getByLabel('Pay in 3 instalments').check();
    const email = page.getByLabel('Your email address');
    await email.waitFor();
    assert.equal(await page.frameLocator('iframe[title="Card details"]').getByLabel('Card number', { exact: true }).isVisible(), false, 'no card fields for instalments');
    await payButton(page).click();
    await page.getByText('Enter an email address such as name@example.com.').waitFor();
    await email.fill('shopper@example.com');
    await page.getByText('Enter an email address such as name@example.com.').waitFor({ state: 'detached' });
    await payButton(page).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    const { rows } = await t.testDb.db.query<{ customer: { email?: string } }>(
      'SELECT customer FROM payments WHERE entity_id = $1 AND amount = 6000 ORDER BY created_at DESC LIMIT 1', [m.entityId]);
    assert.equal(rows[0]?.customer?.email, 'shopper@example.com', 'the email went with that payment');
    await page.close();
  });

  it('pays with the keyboard only: Tab into the card fields, Enter pays', async () => {
    const { page } = await open();
    await page.locator('body').click({ position: { x: 1, y: 1 } });
    await page.keyboard.press('Tab'); // the card number, in the frame
    await page.keyboard.type('4242424242424242');
    await page.keyboard.press('Tab');
    await page.keyboard.type('1231');
    await page.keyboard.press('Tab');
    await page.keyboard.type(CVC);
    await page.keyboard.press('Tab');
    await page.keyboard.type('Ada Shopper');
    await page.keyboard.press('Enter');
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    await page.close();
  });

  it('has no accessibility violation of any impact (axe-core) on the merchant page with its card frame, at 375 and 1280 px', async () => {
    for (const viewport of [{ width: 375, height: 812 }, { width: 1280, height: 800 }]) {
      const context = await browser.newContext({ viewport, bypassCSP: true });
      const page = await context.newPage();
      await page.goto(`${shop}/checkout?amount=6000`);
      const card = page.frameLocator('iframe[title="Card details"]');
      await card.getByLabel('Card number', { exact: true }).waitFor();
      await assertNoAxeViolations(page, `merchant page with the card frame ${viewport.width}`);
      await fill(card, '4000 0000 0000 3220');
      await payButton(page).click();
      await page.frameLocator('dialog iframe').getByRole('button', { name: 'Approve the payment' }).waitFor();
      await assertNoAxeViolations(page, `merchant page with the 3-D Secure modal ${viewport.width}`);
      const exp = await card.getByLabel('Expiry date (MM/YY)').boundingBox();
      const cvc = await card.getByLabel('Security code (CVV)').boundingBox();
      assert.ok(exp && cvc && Math.abs(exp.y - cvc.y) < 2 && cvc.x > exp.x + exp.width, 'expiry and CVC side by side');
      assert.equal(await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth), false, 'nothing wider than the screen');
      await page.screenshot({ path: `${SHOTS}/secure-fields-3ds-${viewport.width}.png`, fullPage: true });
      await context.close();
    }
  });
});
