// A saved card in the widget (issue 42 item 8), in headless Chromium: the merchant's page
// (another site than payd) mounts the widget for a session whose customer has a saved
// card; the widget lists it (brand, last four, expiry), the card frame asks only for the
// CVC, and the payment goes through with the saved card. A script of the merchant's page
// reads everything it can and finds no CVC and no card number.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium } from 'playwright-core';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';

const SHOTS = 'test-results/e2e';
const CVC = '987';
const NUMBER = '4242424242424242';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--host-resolver-rules=MAP pay.example 127.0.0.1, MAP shop.test 127.0.0.1'];
const year = String(new Date().getFullYear() + 2);

// What the merchant's page script can observe: installed before the widget loads.
const SPY = `
window.__seen = { messages: [], keys: [] };
window.addEventListener('message', (e) => { try { window.__seen.messages.push(JSON.stringify(e.data)); } catch { window.__seen.messages.push(String(e.data)); } }, true);
for (const type of ['keydown', 'keyup', 'input', 'paste', 'change']) document.addEventListener(type, (e) => window.__seen.keys.push(type + ':' + (e.key || '') + ':' + (e.target && 'value' in e.target ? e.target.value : '')), true);
window.__harvest = () => ({
  dom: document.documentElement.outerHTML,
  inputs: Array.from(document.querySelectorAll('input')).map((i) => i.value),
  messages: window.__seen.messages, keys: window.__seen.keys,
  frame: (() => { try { return document.querySelector('iframe').contentDocument; } catch { return 'blocked'; } })() === null,
});`;

describe('a saved card in the widget: only the CVC, inside the card frame (Chromium)', () => {
  let t: TestApp;
  let m: Merchant;
  let payd: string;
  let shop: string;
  let shopServer: http.Server;
  let browser: Browser;
  let savedId: string;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const port = await freePort();
    payd = `http://pay.example:${port}`;
    t = await createTestApp({ baseUrl: payd });
    await t.app.listen({ port, host: '127.0.0.1' });
    m = await t.createMerchant('Saved card shop');
    // An earlier order kept the shopper's card (allow_future_usage, the customer named).
    const first = await t.app.inject({
      method: 'POST', url: '/v2/payments', headers: { ...m.auth, 'x-idempotency-key': 'first-order' },
      payload: {
        amount: 1200, currency: 'EUR', allow_future_usage: true, customer: { reference: 'shopper-7', email: 'ada@example.com' },
        split: [{ partner: 'card-sim', method: 'CARD', amount: 1200, instrument: { type: 'CARD', number: NUMBER, expiry_month: '11', expiry_year: year, cvv: '123' } }],
      },
    });
    savedId = first.json().authorization.partner_transactions[0].saved_card_id;
    assert.ok(savedId, first.body);

    shopServer = http.createServer(async (req, res) => {
      const url = new URL(req.url!, shop);
      const html = (body: string) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body><main>${body}</main></body></html>`);
      };
      if (url.pathname === '/checkout') {
        const s = await t.app.inject({
          method: 'POST', url: '/v2/client-sessions', headers: m.auth,
          payload: { amount: 3100, currency: 'EUR', shopper_redirection_url: `${shop}/return`, order: { reference: 'sc-1' }, customer: { reference: 'shopper-7', locale: 'en' } },
        });
        return html(`<h1>Checkout</h1><div id="pay"></div><script>${SPY}</script><script src="${payd}/checkout/widget.js"></script>
<script>PaydCheckout.mount('#pay', { data: ${JSON.stringify(s.json().widget.data)} });</script>`);
      }
      if (url.pathname === '/return') return html('<h1 id="result">back</h1>');
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

  it('lists the saved card, asks only its CVC in the frame, and pays with it; the merchant page reads no digits', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await page.goto(`${shop}/checkout`);
    const label = `VISA ending in 4242, expires 11/${year}`;
    const savedRadio = page.getByLabel(label);
    await savedRadio.waitFor();
    assert.equal(await savedRadio.isChecked(), true, 'the saved card is chosen by default');
    const card = page.frameLocator('iframe[title="Card details"]');
    const cvc = card.getByLabel('Security code (CVV)');
    await cvc.waitFor();
    await card.getByLabel('Card number', { exact: true }).waitFor({ state: 'hidden' });
    assert.equal(await card.getByLabel('Expiry date (MM/YY)').isVisible(), false, 'only the CVC is asked');

    // A new card shows every field again; back to the saved card.
    await page.getByLabel('A new card').check();
    await card.getByLabel('Card number', { exact: true }).waitFor();
    await savedRadio.check();
    await card.getByLabel('Card number', { exact: true }).waitFor({ state: 'hidden' });

    await cvc.pressSequentially(CVC);
    await page.screenshot({ path: `${SHOTS}/saved-card-form.png`, fullPage: true });
    const seen = await page.evaluate(() => (window as unknown as { __harvest: () => { dom: string; inputs: string[]; messages: string[]; keys: string[]; frame: boolean } }).__harvest());
    const asValue = new RegExp(`(^|[^0-9A-Za-z])${CVC}([^0-9A-Za-z]|$)`);
    assert.ok(!seen.dom.includes(NUMBER) && !seen.messages.join('\n').includes(NUMBER), 'no card number on the merchant page');
    assert.ok(!seen.inputs.some((v) => asValue.test(v)), 'no input of the merchant page holds the CVC');
    assert.ok(!seen.messages.some((x) => asValue.test(x)), 'no message to the merchant page holds the CVC');
    assert.ok(!asValue.test(seen.dom), 'the merchant page\'s DOM does not hold the CVC');
    // (The page hears its own radio buttons change, values 0 and 1; no key and no value of the frame.)
    assert.deepEqual(seen.keys.filter((k) => /^key(down|up):[0-9]/.test(k) || k.includes(CVC)), [], 'no keystroke of the CVC reaches the merchant page');
    assert.ok(seen.frame, 'the card frame is payd\'s: the merchant page cannot reach into it');

    await page.getByRole('button', { name: /^Pay/ }).click();
    await page.waitForURL(/\/return\?/, { timeout: 15_000 });
    const token = new URL(page.url()).searchParams.get('service-redirection-data')!;
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { payment_id: string; authorization_status: string };
    assert.equal(claims.authorization_status, 'AUTHORIZED');
    const p = (await t.app.inject({ url: `/v2/payments/${claims.payment_id}`, headers: m.auth })).json();
    const tx = p.authorization.partner_transactions[0];
    assert.equal(tx.saved_card_id, savedId, 'paid with the saved card');
    assert.equal(tx.card.last_four_digits, '4242');
    const sim = (await t.testDb.db.query<{ data: Record<string, unknown> }>('SELECT data FROM sim_partner_operations WHERE key = $1', [`${p.id}:1`])).rows[0]!;
    assert.equal(sim.data.initiator, 'CUSTOMER');
    await page.close();
  });
});
