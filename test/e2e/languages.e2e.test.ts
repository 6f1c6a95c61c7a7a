// Languages on shopper pages in headless Chromium (issue 42, item 3): a French shopper
// goes through the hosted page, a 3-D Secure challenge and the outcome, and reads a
// payment link's status pages, all in French with <html lang="fr">; the hosted page
// follows the merchant's customer.locale even in an English browser; the language switch
// is used with the keyboard, keeps the session (the fragment) and is remembered on
// later pages. Every page passes axe-core with no violation at all, at 1280 and 375 px.
import { launchChromium } from '../helpers/browser.ts';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/processes.ts';

const SHOTS = 'test-results/e2e';
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

describe('shopper languages in Chromium', () => {
  let t: TestApp;
  let m: Merchant;
  let payd: string;
  let browser: Browser;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const port = await freePort();
    payd = `http://127.0.0.1:${port}`;
    t = await createTestApp({ baseUrl: payd });
    await t.app.listen({ port, host: '127.0.0.1' });
    m = await t.createMerchant('Boulangerie Ada');
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const api = async (path: string, body: Record<string, unknown>) => {
    const res = await fetch(`${payd}${path}`, { method: 'POST', headers: { authorization: `Bearer ${m.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.ok(res.ok, await res.clone().text());
    return res.json() as Promise<Record<string, any>>;
  };
  const hosted = (extra: Record<string, unknown> = {}) => api('/v2/client-sessions', { amount: 2500, currency: 'EUR', integration_mode: 'HOSTED_PAGE', order: { reference: 'cmd-42' }, ...extra });
  const link = (extra: Record<string, unknown> = {}) => api('/v2/payment-links', { amount: 1999, currency: 'EUR', ...extra });
  /** A shopper's browser: its language (Accept-Language and navigator.language) and screen. */
  const shopper = (locale: string, width = 1280): Promise<BrowserContext> =>
    browser.newContext({ locale, viewport: { width, height: width < 500 ? 812 : 800 }, bypassCSP: true }); // bypassCSP only lets axe into payd's strict-CSP pages
  const htmlLang = (page: Page) => page.evaluate(() => document.documentElement.lang);
  const cardFrame = (page: Page) => page.frameLocator('iframe.payd-frame');
  const fillCardFr = async (page: Page, number: string) => {
    const card = cardFrame(page);
    await card.getByLabel('Numéro de carte', { exact: true }).fill(number);
    await card.getByLabel('Date d’expiration (MM/AA)').fill('12/31');
    await card.getByLabel('Cryptogramme (CVV)').fill('123');
    await card.getByLabel('Nom sur la carte').fill('Ada Cliente');
  };

  /** axe-core over the page and its frames (axe in every frame, run from the top, as axe audits a page): no violation, whatever its impact. */
  async function audit(page: Page, name: string) {
    for (const frame of page.frames()) if (frame.url().startsWith('http')) await frame.addScriptTag({ content: axeSource });
    const violations = await page.evaluate(async () => {
      const result = await (window as unknown as { axe: { run: (o: unknown) => Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }> } }).axe.run({ iframes: true });
      return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target) }));
    });
    assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations)}`);
  }

  it('a French shopper pays on the hosted page through a 3-D Secure challenge, in French from start to receipt', async () => {
    const s = await hosted();
    const context = await shopper('fr-FR');
    const page = await context.newPage();
    await page.goto(s.links.hosted_page.href);
    await page.getByRole('heading', { level: 1, name: 'Paiement sécurisé' }).waitFor();
    assert.equal(await htmlLang(page), 'fr');
    await page.getByText('Montant à payer : 25,00 €').waitFor();
    await page.getByRole('navigation', { name: 'Langue' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Français' }).getAttribute('aria-current'), 'true');
    await fillCardFr(page, '4000 0000 0000 3220');
    await page.getByRole('button', { name: /^Payer/ }).click();

    // The simulated bank's page, in French.
    await page.getByRole('heading', { level: 1, name: 'Confirmez votre paiement' }).waitFor();
    assert.equal(await htmlLang(page), 'fr');
    await page.getByText('Votre banque vous demande de confirmer un paiement de 25,00 €.').waitFor();
    await page.screenshot({ path: `${SHOTS}/lang-3ds-fr.png`, fullPage: true });
    await page.getByRole('button', { name: 'Approuver le paiement' }).click();

    // The outcome: payd's receipt (no way back to a merchant), in French.
    await page.getByText('Merci : votre paiement a été accepté.').waitFor();
    assert.equal(await htmlLang(page), 'fr');
    await page.getByRole('heading', { level: 1, name: 'Paiement accepté' }).waitFor();
    await page.getByRole('region', { name: 'Reçu' }).waitFor();
    await page.screenshot({ path: `${SHOTS}/lang-receipt-fr.png`, fullPage: true });
    await context.close();
  });

  it('follows the merchant\'s customer.locale in an English browser; the switch (by keyboard) keeps the session and is remembered', async () => {
    const s = await hosted({ customer: { locale: 'fr' } });
    const context = await shopper('en-US');
    const page = await context.newPage();
    await page.goto(s.links.hosted_page.href);
    // The page was rendered before the session was known (English browser); the widget says it again in the session's language.
    await page.getByText('Montant à payer : 25,00 €').waitFor();
    await page.getByRole('heading', { level: 1, name: 'Paiement sécurisé' }).waitFor();
    assert.equal(await htmlLang(page), 'fr');
    assert.equal(await page.title(), 'Paiement sécurisé');
    assert.equal(await page.getByRole('link', { name: 'Français' }).getAttribute('aria-current'), 'true');
    assert.equal(await page.getByRole('link', { name: 'English' }).getAttribute('aria-current'), null);

    // The shopper prefers English: Tab to the switch and press Enter.
    let focused = '';
    for (let i = 0; i < 5 && focused !== 'English'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => document.activeElement?.textContent ?? '');
    }
    assert.equal(focused, 'English', 'the switch is reached with the keyboard, first on the page');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\?lang=en#session=/);
    await page.getByText('Amount to pay: €25.00').waitFor();
    assert.equal(await htmlLang(page), 'en');
    await page.getByRole('heading', { level: 1, name: 'Secure payment' }).waitFor();
    await cardFrame(page).getByLabel('Card number', { exact: true }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'English' }).getAttribute('aria-current'), 'true');

    // Remembered: a link of a French customer, opened later in this browser, is in English.
    const l = await link({ customer: { locale: 'fr-FR' } });
    await page.goto(l.links.customer_url.href);
    await page.getByText('Amount due: €19.99.').waitFor();
    assert.equal(await htmlLang(page), 'en');
    await page.getByText('Amount to pay: €19.99').waitFor();
    // And back to French with the switch.
    await page.getByRole('link', { name: 'Français' }).click();
    await page.getByText('Montant à payer : 19,99 €').waitFor();
    assert.equal(await htmlLang(page), 'fr');
    await context.close();
  });

  it('tells a French shopper a payment link\'s status in French: paid, cancelled, expired, not found', async () => {
    const context = await shopper('fr-FR');
    const page = await context.newPage();
    const paid = await link();
    const data = await (async () => {
      await page.goto(paid.links.customer_url.href);
      return page.locator('script[data-payd-session]').getAttribute('data-payd-session');
    })();
    await fillCardFr(page, '4242 4242 4242 4242');
    await page.getByRole('button', { name: /^Payer/ }).click();
    await page.getByText('Merci : votre paiement a été accepté.').waitFor();
    assert.ok(data);
    await page.goto(paid.links.customer_url.href);
    await page.getByRole('heading', { level: 1, name: 'Déjà payé' }).waitFor();
    assert.equal(await htmlLang(page), 'fr');
    await page.getByText('Ce lien de paiement de 19,99 € à Boulangerie Ada a été payé.', { exact: false }).waitFor();
    await page.screenshot({ path: `${SHOTS}/lang-link-paid-fr.png`, fullPage: true });

    const cancelled = await link();
    await fetch(`${payd}/v2/payment-links/${cancelled.id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${m.token}` } });
    const res = await page.goto(cancelled.links.customer_url.href);
    assert.equal(res?.status(), 410);
    await page.getByRole('heading', { level: 1, name: 'Lien de paiement annulé' }).waitFor();

    const expired = await link();
    await t.testDb.db.query(`UPDATE payment_links SET expires_at = now() - interval '1 minute', created_at = now() - interval '2 minutes' WHERE id = $1`, [expired.id]);
    await page.goto(expired.links.customer_url.href);
    await page.getByRole('heading', { level: 1, name: 'Lien de paiement expiré' }).waitFor();

    await page.goto(`${payd}/pay/00000000-0000-4000-8000-000000000000`);
    await page.getByRole('heading', { level: 1, name: 'Lien de paiement introuvable' }).waitFor();
    assert.equal(await htmlLang(page), 'fr');
    await context.close();
  });

  it('passes axe-core with no violation on the French hosted, 3-D Secure, outcome, link and link status pages, at 1280 and 375 px', async () => {
    for (const width of [1280, 375]) {
      const context = await shopper('fr-FR', width);
      const page = await context.newPage();
      const s = await hosted();
      await page.goto(s.links.hosted_page.href);
      await cardFrame(page).getByLabel('Numéro de carte', { exact: true }).waitFor();
      await audit(page, `hosted page ${width}`);
      await page.screenshot({ path: `${SHOTS}/lang-hosted-fr-${width}.png`, fullPage: true });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
      assert.equal(overflow, false, `nothing wider than the ${width} px screen`);
      await fillCardFr(page, '4000 0000 0000 3220');
      await page.getByRole('button', { name: /^Payer/ }).click();
      await page.getByRole('button', { name: 'Approuver le paiement' }).waitFor();
      await audit(page, `3-D Secure page ${width}`);
      await page.getByRole('button', { name: 'Approuver le paiement' }).click();
      await page.getByText('Merci : votre paiement a été accepté.').waitFor();
      await audit(page, `receipt ${width}`);

      const l = await link({ order: { reference: 'fac-9' } });
      await page.goto(l.links.customer_url.href);
      await cardFrame(page).getByLabel('Numéro de carte', { exact: true }).waitFor();
      await audit(page, `link page ${width}`);
      await fetch(`${payd}/v2/payment-links/${l.id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${m.token}` } });
      await page.goto(l.links.customer_url.href);
      await page.getByRole('heading', { level: 1, name: 'Lien de paiement annulé' }).waitFor();
      await audit(page, `link status page ${width}`);
      await page.screenshot({ path: `${SHOTS}/lang-link-cancelled-fr-${width}.png`, fullPage: true });
      await context.close();
    }
  });
});
