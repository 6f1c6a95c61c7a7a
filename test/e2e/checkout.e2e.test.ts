// End to end in headless Chromium (playwright-core driving /usr/bin/chromium): a
// merchant page on its own origin embeds widget.js and pays; the shopper comes back to
// the merchant, whose server verifies service-redirection-data against GET
// /v2/signing-jwks. Payment links are paid (and refused when cancelled) on their page.
// The session credential (widget.data) never appears in a URL the browser requests, nor
// in a URL payd logs: every request of every page is recorded, in the browser and on
// payd's side, and checked against every credential handed out.
// The card fields are in payd's card frame (issue 42): the tests type into that frame.
// test/e2e/secure-fields.e2e.test.ts runs the merchant page on another site and checks
// that its scripts see no card data.
// Screenshots go to test-results/ (kept by CI as artifacts).
import { assertNoAxeViolations, launchChromium } from '../helpers/browser.ts';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { type Browser, type FrameLocator, type Page } from 'playwright-core';
import { createTestApp, type Merchant, type TestApp, returnPath } from '../helpers/app.ts';
import { loggerOptions } from '../../src/platform/observability/logger.ts';
import { freePort } from '../helpers/processes.ts';
import { createShop, type Shop } from '../../examples/checkout-shop/shop.ts';

const SHOTS = 'test-results/e2e';


/** Every session credential handed out during the run. */
const credentials: string[] = [];

describe('checkout in Chromium', () => {
  let t: TestApp;
  let m: Merchant;
  let payd: string;
  let shop: string;
  let shopServer: Shop;
  let browser: Browser;

  /** Request URLs as the browser reported them, and as payd received them. */
  const browserUrls: string[] = [];
  const paydUrls: string[] = [];

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const port = await freePort();
    payd = `http://127.0.0.1:${port}`;
    t = await createTestApp({ baseUrl: payd }, {
      beforeReady: (app) => {
        app.addHook('onRequest', async (request) => void paydUrls.push(request.url));
      },
    });
    await t.app.listen({ port, host: '127.0.0.1' });
    m = await t.createMerchant('E2E shop');
    // The runnable example shop (examples/checkout-shop), as a merchant would run it.
    shopServer = createShop({ payd, apiKey: m.apiKey, entityId: m.entityId, onSession: (data) => void credentials.push(data) });
    shop = await shopServer.start();
    browser = await launchChromium();
  });
  after(async () => {
    // Checked once more over the whole run (each test checks its own pages too).
    if (credentials.length) assertNoCredentialInUrls();
    await browser?.close();
    await shopServer?.close();
    await t?.close();
  });

  const newPage = async (): Promise<Page> => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } }); // a phone
    page.on('request', (r) => void browserUrls.push(r.url()));
    return page;
  };
  const logged = (url: string) => JSON.stringify((loggerOptions('info').serializers!.req as (r: unknown) => unknown)({ method: 'GET', url, headers: {} }));
  function assertNoCredentialInUrls() {
    assert.ok(browserUrls.length > 0 && paydUrls.length > 0);
    for (const c of credentials) {
      const forms = [c, encodeURIComponent(c)];
      for (const u of browserUrls) for (const f of forms) assert.ok(!u.includes(f), `the browser requested a URL with a credential: ${u.slice(0, 80)}`);
      for (const u of paydUrls) for (const f of forms) assert.ok(!logged(u).includes(f), `payd would log a URL with a credential: ${u.slice(0, 80)}`);
    }
  }
  /** The credential a payd page mounted the widget with (payment link pages write it in the page). */
  const pageCredential = async (page: Page) => {
    const data = await page.locator('script[data-payd-session]').getAttribute('data-payd-session').catch(() => null);
    if (data) credentials.push(data);
  };
  /** A HOSTED_PAGE client session made through the API (its credential recorded for the URL checks). */
  const hostedSession = async (extra: Record<string, unknown>) => {
    const s = await (await fetch(`${payd}/v2/client-sessions`, {
      method: 'POST', headers: { authorization: `Bearer ${m.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ currency: 'EUR', integration_mode: 'HOSTED_PAGE', ...extra }),
    })).json() as { id: string; widget: { data: string }; links: { hosted_page: { href: string } } };
    credentials.push(s.widget.data);
    return s;
  };
  /** The card fields: payd's card frame in the page. */
  const cardFrame = (page: Page): FrameLocator => page.frameLocator('iframe.payd-frame');
  const cardNumber = (page: Page) => cardFrame(page).getByLabel('Card number', { exact: true });
  const fillCard = async (page: Page, number: string) => {
    const card = cardFrame(page);
    await card.getByLabel('Card number', { exact: true }).fill(number);
    await card.getByLabel('Expiry date (MM/YY)').fill('12/31');
    await card.getByLabel('Security code (CVV)').fill('123');
    await card.getByLabel('Name on card').fill('Ada Shopper');
  };
  const result = async (page: Page) => {
    await page.waitForURL(/\/return\?/, { timeout: 15_000 });
    return page.locator('#result').textContent();
  };

  it('pays by card (frictionless); the merchant verifies the token', async () => {
    const page = await newPage();
    await page.goto(`${shop}/checkout`);
    await fillCard(page, '4242 4242 4242 4242');
    await page.screenshot({ path: `${SHOTS}/card-form.png`, fullPage: true });
    await page.getByRole('button', { name: /^Pay/ }).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    assert.doesNotMatch(page.url(), /4242/, 'no card data in the URL');
    await page.screenshot({ path: `${SHOTS}/card-return.png` });
    await page.close();
  });

  it('checks the card in the page before sending it', async () => {
    const page = await newPage();
    await page.goto(`${shop}/checkout`);
    await fillCard(page, '4242 4242 4242 4241');
    await cardFrame(page).getByLabel('Expiry date (MM/YY)').fill('01/20');
    await page.getByRole('button', { name: /^Pay/ }).click();
    await cardFrame(page).getByText('This card number is not valid').waitFor();
    await cardFrame(page).getByText('This card has expired').waitFor();
    assert.equal(await cardNumber(page).getAttribute('aria-invalid'), 'true');
    const frame = page.frames().find((f) => f.url().includes('/checkout/card-frame'))!;
    assert.equal(await frame.evaluate(() => document.activeElement?.getAttribute('autocomplete')), 'cc-number', 'focus moves to the first error');
    await page.screenshot({ path: `${SHOTS}/card-errors.png`, fullPage: true });
    await page.close();
  });

  it('runs the 3-D Secure challenge in a modal frame on the merchant\'s page', async () => {
    const page = await newPage();
    await page.goto(`${shop}/checkout`);
    await fillCard(page, '4000 0000 0000 3220');
    await page.getByRole('button', { name: /^Pay/ }).click();
    const acs = page.frameLocator('dialog.payd-3ds iframe');
    await acs.getByRole('button', { name: 'Approve the payment' }).waitFor();
    assert.match(page.url(), /\/checkout$/, 'the shopper stays on the merchant\'s page');
    await page.screenshot({ path: `${SHOTS}/3ds-challenge.png`, fullPage: true });
    await acs.getByRole('button', { name: 'Approve the payment' }).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    await page.close();
  });

  it('says a declined card was declined, in place, and takes another card in the same session (issue 20)', async () => {
    const page = await newPage();
    await page.goto(`${shop}/checkout`);
    await fillCard(page, '4000 0000 0000 0002');
    await page.getByRole('button', { name: /^Pay/ }).click();
    await page.getByRole('alert').filter({ hasText: 'Your payment was declined, and no money was taken.' }).waitFor();
    assert.match(page.url(), /\/checkout/, 'the shopper stays on the checkout page');
    assert.equal(await cardNumber(page).inputValue(), '', 'the declined card number left the page');
    assert.equal(await page.getByRole('button', { name: /^Pay/ }).isEnabled(), true);
    await page.screenshot({ path: `${SHOTS}/declined-in-place.png`, fullPage: true });
    await fillCard(page, '4242 4242 4242 4242');
    await page.getByRole('button', { name: /^Pay/ }).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    await page.close();
  });

  it('leads a failed 3-D Secure check on the hosted page back to the page; Back after the check has a way onward', async () => {
    const s = await hostedSession({ amount: 4100, shopper_redirection_url: `${shop}/return` });
    const page = await newPage();
    await page.goto(s.links.hosted_page.href);
    await fillCard(page, '4000 0000 0000 3220');
    await page.getByRole('button', { name: /^Pay/ }).click();
    await page.getByRole('button', { name: 'Fail authentication' }).waitFor();
    const acsUrl = page.url();
    await page.getByRole('button', { name: 'Fail authentication' }).click();
    await page.getByRole('alert').filter({ hasText: 'Your payment was declined' }).waitFor();
    await page.screenshot({ path: `${SHOTS}/3ds-failed-back-on-page.png`, fullPage: true });
    // Back to the (finished) challenge page (as the Back button loads it again): it says
    // so and leads onward, no dead end.
    await page.goto(acsUrl);
    await page.getByText('This card authentication is already finished').waitFor();
    await page.getByRole('link', { name: 'Continue' }).click();
    await page.getByRole('alert').filter({ hasText: 'Your payment was declined' }).waitFor();
    await cardNumber(page).waitFor();
    await fillCard(page, '4242 4242 4242 4242');
    await page.getByRole('button', { name: /^Pay/ }).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    await page.close();
  });

  it('groups the card number as typed, names the brand, puts expiry and CVV side by side, and speaks French (issue 20, items 6 and 7)', async () => {
    const s = await hostedSession({ amount: 2500, customer: { locale: 'fr-FR' }, order: { reference: 'cmd-7' } });
    const context = await browser.newContext({ viewport: { width: 375, height: 812 }, locale: 'fr-FR' });
    const page = await context.newPage();
    page.on('request', (r) => void browserUrls.push(r.url()));
    await page.goto(s.links.hosted_page.href);
    const number = cardFrame(page).getByLabel('Numéro de carte', { exact: true });
    await number.pressSequentially('4242424242424242');
    assert.equal(await number.inputValue(), '4242 4242 4242 4242');
    await cardFrame(page).getByText('Visa', { exact: true }).waitFor();
    assert.doesNotMatch(String(await number.getAttribute('placeholder')), /4242/, 'no real test card as placeholder');
    await page.getByText('Montant à payer : 25,00 €').waitFor();
    await page.getByText('Commande cmd-7').waitFor();
    await page.screenshot({ path: `${SHOTS}/widget-fr-375.png`, fullPage: true });
    const exp = await cardFrame(page).getByLabel('Date d’expiration (MM/AA)').boundingBox();
    const cvv = await cardFrame(page).getByLabel('Cryptogramme (CVV)').boundingBox();
    assert.ok(exp && cvv && Math.abs(exp.y - cvv.y) < 2 && cvv.x > exp.x + exp.width, 'expiry and CVV side by side');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    assert.equal(overflow, false, 'nothing wider than a 375 px phone');
    await context.close();
  });

  it('has no accessibility violation of any impact (axe-core) on the shopper pages, at 375 px and desktop', async () => {
    // The page with its frames (the card frame, the 3-D Secure modal's frame), as axe audits a page.
    const audit = assertNoAxeViolations;
    const api = (path: string, body: unknown, headers: Record<string, string> = {}) => fetch(`${payd}${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${m.token}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: await r.json() as Record<string, any> }));
    /** A payment attempt through the checkout API, as the widget makes it. */
    const submit = (data: string, number: string, amount: number) => fetch(`${payd}/checkout/v1/session/payments`, {
      method: 'POST', headers: { 'x-payd-session': data, 'content-type': 'application/json' },
      body: JSON.stringify({ split: [{ partner: 'card-sim', method: 'CARD', amount, instrument: { type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' } }] }),
    }).then(async (r) => (await r.json() as { authorization_status: string }).authorization_status);
    // A saved card of a customer, for the widget that lists it.
    const saved = await api('/v2/payments', {
      amount: 1000, currency: 'EUR', allow_future_usage: true, customer: { reference: 'a11y-wallet' },
      split: [{ partner: 'card-sim', method: 'CARD', amount: 1000, instrument: { type: 'CARD', number: '4242424242424242', expiry_month: '12', expiry_year: '2031', cvv: '123' } }],
    }, { 'x-idempotency-key': 'a11y-wallet-save' });
    assert.ok(saved.body.authorization?.partner_transactions?.[0]?.saved_card_id, JSON.stringify(saved.body));

    for (const viewport of [{ width: 375, height: 812 }, { width: 1280, height: 800 }]) {
      const w = viewport.width;
      // bypassCSP only lets the test inject axe into payd's strict-CSP pages.
      const context = await browser.newContext({ viewport, bypassCSP: true });
      const page = await context.newPage();
      page.on('request', (r) => void browserUrls.push(r.url()));
      await page.goto(`${shop}/checkout`);
      await cardNumber(page).waitFor();
      await audit(page, `widget ${w}`);
      await fillCard(page, '4242 4242 4242 4241');
      await cardFrame(page).getByLabel('Expiry date (MM/YY)').fill('01/20');
      await page.getByRole('button', { name: /^Pay/ }).click();
      await cardFrame(page).getByText('This card has expired').waitFor();
      await audit(page, `widget with field errors ${w}`);
      await fillCard(page, '4000 0000 0000 0002');
      await page.getByRole('button', { name: /^Pay/ }).click();
      await page.getByRole('alert').filter({ hasText: 'declined' }).waitFor();
      await audit(page, `widget after a decline ${w}`);
      await fillCard(page, '4000 0000 0000 3220');
      await page.getByRole('button', { name: /^Pay/ }).click();
      const acs = page.frameLocator('dialog.payd-3ds iframe');
      await acs.getByRole('button', { name: 'Approve the payment' }).waitFor();
      await audit(page, `3-D Secure modal ${w}`);
      await page.screenshot({ path: `${SHOTS}/3ds-${w}.png`, fullPage: true });
      // payd's 3-D Secure return page in the modal, kept there (its script, which tells the widget, held back).
      await page.route('**/checkout/3ds-done.js', (route) => route.abort());
      await acs.getByRole('button', { name: 'Approve the payment' }).click();
      await acs.getByText('Checking with your bank…').waitFor();
      await audit(page, `3-D Secure return page in the modal ${w}`);
      await page.unroute('**/checkout/3ds-done.js');

      // Buy now, pay later: the email asked in the widget, then its error.
      await page.goto(`${shop}/checkout?amount=6000`);
      await cardNumber(page).waitFor();
      await page.getByLabel('Pay in 3 instalments').check();
      await page.getByLabel('Your email address').waitFor();
      await audit(page, `widget with the BNPL email field ${w}`);
      await page.getByRole('button', { name: /^Pay/ }).click();
      await page.getByText('Enter an email address such as name@example.com.').waitFor();
      await audit(page, `widget with the BNPL email error ${w}`);

      // The hosted page listing a customer's saved card.
      const wallet = await hostedSession({ amount: 1500, customer: { reference: 'a11y-wallet' } });
      await page.goto(wallet.links.hosted_page.href);
      await page.getByLabel(/VISA ending in 4242/).waitFor();
      await cardFrame(page).getByLabel('Security code (CVV)').waitFor();
      await audit(page, `hosted page with a saved card ${w}`);

      const session = await hostedSession({ amount: 1500, order: { reference: 'a11y' } });
      await page.goto('about:blank'); // the hosted page's address differs from the last one by its fragment only
      await page.goto(session.links.hosted_page.href);
      await cardNumber(page).waitFor();
      await audit(page, `hosted page ${w}`);
      await fillCard(page, '4242 4242 4242 4242');
      await page.getByRole('button', { name: /^Pay/ }).click();
      await page.getByText('Thank you: your payment was accepted.').waitFor();
      await audit(page, `receipt ${w}`);
      await page.screenshot({ path: `${SHOTS}/receipt-${w}.png`, fullPage: true });

      // The outcome pages of a session without a way back to the merchant: nothing paid, and a payment still being confirmed.
      const idle = await hostedSession({ amount: 1500 });
      await page.goto(`${payd}${returnPath(idle.id)}`);
      await page.getByText('No payment was made.').waitFor();
      await audit(page, `outcome page: not completed ${w}`);
      const pending = await hostedSession({ amount: 1500 });
      assert.equal(await submit(pending.widget.data, '4000000000003220', 1500), 'PENDING');
      await page.goto(`${payd}${returnPath(pending.id)}`);
      await page.getByRole('status').waitFor();
      await audit(page, `outcome page: being confirmed ${w}`);

      // The payment link: its page, then paid; an expired link; an unknown one.
      const link = await api('/v2/payment-links', { amount: 1999, currency: 'EUR', order: { reference: 'inv-a11y' } });
      const linkUrl = link.body.links.customer_url.href as string;
      await page.goto(linkUrl);
      await pageCredential(page);
      await cardNumber(page).waitFor();
      await audit(page, `payment-link page ${w}`);
      await page.screenshot({ path: `${SHOTS}/link-${w}.png`, fullPage: true });
      const linkData = (await page.locator('script[data-payd-session]').getAttribute('data-payd-session'))!;
      assert.equal(await submit(linkData, '4242424242424242', 1999), 'AUTHORIZED');
      await page.goto(linkUrl);
      await page.getByRole('heading', { level: 1 }).waitFor();
      assert.equal(await page.locator('iframe.payd-frame').count(), 0, 'the paid link shows no form');
      await audit(page, `payment-link paid ${w}`);
      const expiring = await api('/v2/payment-links', { amount: 1999, currency: 'EUR' });
      await t.testDb.db.query(`UPDATE payment_links SET expires_at = now() - interval '1 minute' WHERE id = $1`, [expiring.body.id]);
      assert.equal((await page.goto(expiring.body.links.customer_url.href as string))?.status(), 410);
      await audit(page, `payment-link expired ${w}`);
      assert.equal((await page.goto(`${payd}/pay/00000000-0000-4000-8000-000000000000`))?.status(), 404);
      await audit(page, `payment-link not found ${w}`);
      await context.close();
    }
  });

  it('splits between a gift card and a card', async () => {
    const page = await newPage();
    await page.goto(`${shop}/checkout?amount=6000`);
    // The card frame ready first, as a shopper sees it (in one full run under load the
    // box was clicked while the widget was still starting, and its state did not hold).
    await cardNumber(page).waitFor();
    await page.getByLabel('Pay part with a gift card').check();
    await page.getByLabel('Gift card number').fill('603612345678');
    await page.getByLabel(/Amount from the gift card/).fill('20.00');
    await fillCard(page, '4242 4242 4242 4242');
    await page.screenshot({ path: `${SHOTS}/split-form.png`, fullPage: true });
    await page.getByRole('button', { name: /^Pay/ }).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    const { rows } = await t.testDb.db.query<{ method: string; amount: number }>(
      `SELECT t.method, t.amount FROM partner_transactions t JOIN payments p ON p.id = t.payment_id
        WHERE p.entity_id = $1 AND p.amount = 6000 AND t.kind = 'AUTHORIZATION' ORDER BY t.seq`, [m.entityId]);
    assert.deepEqual(rows.map((r) => [r.method, Number(r.amount)]), [['GIFT_CARD', 2000], ['CARD', 4000]]);
    await page.close();
  });

  it('pays a payment link on its customer page; a cancelled link refuses', async () => {
    const create = () => fetch(`${payd}/v2/payment-links`, {
      method: 'POST', headers: { authorization: `Bearer ${m.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: 1999, currency: 'EUR', shopper_redirection_url: `${shop}/return` }),
    }).then((r) => r.json()) as Promise<{ id: string; links: { customer_url: { href: string } } }>;
    const link = await create();
    const page = await newPage();
    await page.goto(link.links.customer_url.href);
    await pageCredential(page);
    await fillCard(page, '4242424242424242');
    await page.screenshot({ path: `${SHOTS}/link-page.png`, fullPage: true });
    await page.getByRole('button', { name: /^Pay/ }).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    const after = await fetch(`${payd}/v2/payment-links/${link.id}`, { headers: { authorization: `Bearer ${m.token}` } }).then((r) => r.json()) as { status: string };
    assert.equal(after.status, 'PAID');

    const cancelled = await create();
    await fetch(`${payd}/v2/payment-links/${cancelled.id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${m.token}` } });
    const res = await page.goto(cancelled.links.customer_url.href);
    assert.equal(res?.status(), 410);
    await page.getByText('The merchant cancelled this payment link').waitFor();
    assert.equal(await page.locator('iframe.payd-frame').count(), 0, 'no payment form');
    await page.screenshot({ path: `${SHOTS}/link-cancelled.png` });
    await page.close();
  });
  it('pays on the hosted page; the credential stays in the fragment, out of every requested and logged URL', async () => {
    const create = async () => (await fetch(`${payd}/v2/client-sessions`, {
      method: 'POST', headers: { authorization: `Bearer ${m.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: 3100, currency: 'EUR', integration_mode: 'HOSTED_PAGE', shopper_redirection_url: `${shop}/return` }),
    }).then((r) => r.json())) as { widget: { data: string }; links: { hosted_page: { href: string } } };
    const s = await create();
    credentials.push(s.widget.data);
    assert.equal(s.links.hosted_page.href, `${payd}/checkout/pay#session=${s.widget.data}`);
    const before = browserUrls.length;
    const page = await newPage();
    await page.goto(s.links.hosted_page.href);
    await fillCard(page, '4242 4242 4242 4242');
    await page.screenshot({ path: `${SHOTS}/hosted-page.png`, fullPage: true });
    await page.getByRole('button', { name: /^Pay/ }).click();
    assert.equal(await result(page), 'verified AUTHORIZED SUBMITTED');
    const made = browserUrls.slice(before);
    assert.ok(made.some((u) => u === `${payd}/checkout/pay`), `the page itself was requested without the fragment: ${made.join(' ')}`);
    assert.ok(made.some((u) => u.startsWith(`${payd}/checkout/v1/session`)), 'the widget called the session API');
    assertNoCredentialInUrls();

    // An address of the old form (?session=) still works: moved to the fragment at once.
    const old = await create();
    credentials.push(old.widget.data);
    await page.goto(`${payd}/checkout/pay?session=${encodeURIComponent(old.widget.data)}`);
    await cardNumber(page).waitFor();
    assert.equal(new URL(page.url()).search, '');
    assert.equal(new URL(page.url()).hash, `#session=${encodeURIComponent(old.widget.data)}`);
    const oldUrl = paydUrls.find((u) => u.includes('session='))!;
    assert.doesNotMatch(logged(oldUrl), new RegExp(old.widget.data.slice(0, 20)), 'payd logs the old address redacted');
    paydUrls.splice(paydUrls.indexOf(oldUrl), 1); // the one URL a client other than payd's pages put the credential in
    browserUrls.splice(browserUrls.findIndex((u) => u.includes('session=')), 1);
    assertNoCredentialInUrls();

    // Without the fragment the page says so instead of failing silently.
    await page.goto(`${payd}/checkout/pay`);
    await page.getByText('This payment page address is incomplete').waitFor();
    await page.close();
  });
});
