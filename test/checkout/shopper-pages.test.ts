// Shopper pages say who is asking for money and for what (issue 20, items 3 and 4): the
// merchant's display name (set through the operator API), the order reference and items,
// a receipt on success, and plain words instead of internal statuses.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, type Merchant, type TestApp, returnPath } from '../helpers/app.ts';
import { methodLabel, pickLocale } from '../../src/web/i18n.ts';
import { cardBrand, groupCardNumber } from '../../src/checkout/widget/validation.ts';

const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const ORDER = {
  reference: 'o-2026-77',
  shipments: [{ item_lines: [
    { type: 'PHYSICAL', name: 'Blue mug', quantity: 2, unit_gross_price: 1200 },
    { type: 'SHIPPING_FEES', name: 'Delivery', quantity: 1 },
    { type: 'PHYSICAL', name: '<b>Tea</b>', quantity: 1 },
  ] }],
};

describe('shopper pages name the merchant and the order', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Mugs & Co');
  });
  after(() => t.close());

  const widget = (data: string) => t.app.inject({ url: '/checkout/v1/session', headers: { 'x-payd-session': data } });

  it('gives the widget the merchant name and the order reference and items (not shipping fees)', async () => {
    const s = (await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 3600, currency: 'EUR', order: ORDER } })).json();
    const info = (await widget(s.widget.data)).json();
    assert.deepEqual(info.merchant, { name: 'Mugs & Co' });
    assert.deepEqual(info.order, { reference: 'o-2026-77', items: [{ name: 'Blue mug', quantity: 2 }, { name: '<b>Tea</b>', quantity: 1 }] });
  });

  it('titles a payment-link page with the merchant, shows the order, and follows a rename through the operator API', async () => {
    const link = (await t.app.inject({ method: 'POST', url: '/v2/payment-links', headers: m.auth, payload: { amount: 1999, currency: 'EUR', order: { reference: 'inv-9' } } })).json();
    const path = new URL(link.links.customer_url.href).pathname;
    const page = await t.app.inject({ url: path });
    assert.match(page.body, /<title>Pay Mugs &amp; Co<\/title>/);
    assert.match(page.body, /Order inv-9\. Amount due: €19\.99\./);

    const renamed = await t.app.inject({ method: 'PATCH', url: `/admin/v1/entities/${m.entityId}`, headers: t.adminHeaders, payload: { name: 'Mugs and Tea' } });
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.equal(renamed.json().name, 'Mugs and Tea');
    assert.match((await t.app.inject({ url: path })).body, /<title>Pay Mugs and Tea<\/title>/);
    const blank = await t.app.inject({ method: 'PATCH', url: `/admin/v1/entities/${m.entityId}`, headers: t.adminHeaders, payload: { name: '  ' } });
    assert.equal(blank.statusCode, 400);
    const unknown = await t.app.inject({ method: 'PATCH', url: '/admin/v1/entities/00000000-0000-4000-8000-000000000000', headers: t.adminHeaders, payload: { name: 'x' } });
    assert.equal(unknown.statusCode, 404);
    await t.app.inject({ method: 'PATCH', url: `/admin/v1/entities/${m.entityId}`, headers: t.adminHeaders, payload: { name: 'Mugs & Co' } });
  });

  it('ends on a receipt (merchant, amount, order, card, reference) when the session has no way back to the merchant', async () => {
    const s = (await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 3600, currency: 'EUR', order: ORDER } })).json();
    const paid = await t.app.inject({
      method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': s.widget.data },
      payload: { split: [{ partner: 'card-sim', method: 'CARD', amount: 3600, instrument: card('4242424242424242') }] },
    });
    assert.equal(paid.json().authorization_status, 'AUTHORIZED');
    const page = await t.app.inject({ url: returnPath(s.id) });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /aria-label="Receipt"/);
    assert.match(page.body, /<dt>Paid to<\/dt><dd>Mugs &amp; Co<\/dd>/);
    assert.match(page.body, /<dt>Amount<\/dt><dd>€36\.00<\/dd>/);
    assert.match(page.body, /<dt>Order<\/dt><dd>o-2026-77<\/dd>/);
    assert.match(page.body, /VISA •••• 4242/);
    assert.match(page.body, new RegExp(paid.json().payment_id));
    assert.match(page.body, /&lt;b&gt;Tea&lt;\/b&gt;/, 'item names are escaped');
    assert.doesNotMatch(page.body, /AUTHORIZED|SUBMITTED/, 'no internal status');
  });

  it('the outcome pages open only with the address payd gave (an id alone shows no receipt and signs no return token); nothing is cached', async () => {
    const s = (await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 3600, currency: 'EUR', order: ORDER } })).json();
    const info = await t.app.inject({ url: '/checkout/v1/session', headers: { 'x-payd-session': s.widget.data } });
    assert.equal(info.headers['cache-control'], 'no-store', 'Back shows the session as it is now');
    const paid = (await t.app.inject({
      method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': s.widget.data },
      payload: { split: [{ partner: 'card-sim', method: 'CARD', amount: 3600, instrument: card('4242424242424242') }] },
    })).json();
    assert.equal(new URL(paid.return_url).search, new URL(returnPath(s.id), 'http://x').search, 'the widget is given the signed address');
    for (const url of [`/checkout/return/${s.id}`, `/checkout/return/${s.id}?t=AAAAAAAAAAAAAAAAAAAAAA`, `/checkout/3ds-return/${paid.payment_id}`, `/checkout/3ds-return/${paid.payment_id}?t=${new URL(returnPath(s.id), 'http://x').searchParams.get('t')}`]) {
      const res = await t.app.inject({ url });
      assert.equal(res.statusCode, 404, url);
      assert.doesNotMatch(res.body, /Receipt|4242|Mugs/, url);
      assert.equal(res.headers.location, undefined, url);
    }
    const page = await t.app.inject({ url: returnPath(s.id) });
    assert.equal(page.statusCode, 200);
    assert.equal(page.headers['cache-control'], 'no-store');
    assert.match(page.body, /aria-label="Receipt"/);
  });

  it('says what happened in plain words when nothing was paid', async () => {
    const s = (await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 3600, currency: 'EUR' } })).json();
    const page = await t.app.inject({ url: returnPath(s.id) });
    assert.match(page.body, /No payment was made\./);
    assert.doesNotMatch(page.body, /no payment\)|CREATED|REFUSED/);
  });

  it('speaks French or English: the merchant\'s customer.locale, else Accept-Language, else English', async () => {
    const s = (await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 3600, currency: 'EUR' } })).json();
    assert.equal((await t.app.inject({ url: '/checkout/v1/session', headers: { 'x-payd-session': s.widget.data, 'accept-language': 'fr-FR,fr;q=0.9,en;q=0.8' } })).json().locale, 'fr');
    assert.equal((await t.app.inject({ url: '/checkout/v1/session', headers: { 'x-payd-session': s.widget.data, 'accept-language': 'de-DE,en;q=0.5' } })).json().locale, 'en');
    assert.equal((await widget(s.widget.data)).json().locale, 'en');
    const chosen = (await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 3600, currency: 'EUR', customer: { locale: 'fr-CA' } } })).json();
    assert.equal((await t.app.inject({ url: '/checkout/v1/session', headers: { 'x-payd-session': chosen.widget.data, 'accept-language': 'en-US' } })).json().locale, 'fr');
    const page = await t.app.inject({ url: returnPath(chosen.id), headers: { 'accept-language': 'en-US' } });
    assert.match(page.body, /<html lang="fr">/);
    assert.match(page.body, /Aucun paiement n’a été fait\./);
    const hosted = await t.app.inject({ url: '/checkout/pay', headers: { 'accept-language': 'fr' } });
    assert.match(hosted.body, /<title>Paiement sécurisé<\/title>/);
    const link = (await t.app.inject({ method: 'POST', url: '/v2/payment-links', headers: m.auth, payload: { amount: 1999, currency: 'EUR' } })).json();
    const linkPage = await t.app.inject({ url: new URL(link.links.customer_url.href).pathname, headers: { 'accept-language': 'fr-FR' } });
    assert.match(linkPage.body, /Montant dû : 19,99\s€\./);
  });

  it('chooses locales by q-value, names methods in words, groups card numbers as printed and names the brand', () => {
    assert.equal(pickLocale('en;q=0.4, fr;q=0.8'), 'fr');
    assert.equal(pickLocale('*'), 'en');
    assert.equal(pickLocale(undefined, 'FR'), 'fr');
    assert.equal(pickLocale('fr', 'de'), 'fr', 'an unsupported merchant choice falls back to the browser');
    assert.equal(methodLabel('en', 'INSTALLMENTS_3X'), 'Pay in 3 instalments');
    assert.equal(methodLabel('fr', 'GIFT_CARD'), 'Carte cadeau');
    assert.equal(methodLabel('en', 'SOME_NEW_METHOD'), 'Some new method');
    assert.equal(groupCardNumber('4242424242424242'), '4242 4242 4242 4242');
    assert.equal(groupCardNumber('378282246310005'), '3782 822463 10005');
    assert.equal(groupCardNumber('42424'), '4242 4');
    assert.equal(cardBrand('4242'), 'Visa');
    assert.equal(cardBrand('5555'), 'Mastercard');
    assert.equal(cardBrand('2221'), 'Mastercard');
    assert.equal(cardBrand('3714'), 'American Express');
    assert.equal(cardBrand('9'), undefined);
  });
});
