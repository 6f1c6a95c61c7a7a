// Languages on shopper pages (issue 42, item 3): one decision for every page and answer a
// shopper sees (the shopper's explicit choice by ?lang= or the payd_lang cookie, else the
// merchant's customer.locale, else Accept-Language, else English), <html lang> right, the
// language switch on payd's pages, the link status pages, the outcome pages, the 3-D
// Secure pages and the checkout API's problem details in that language; the merchant's
// API stays English.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestApp, expectProblem, type Merchant, type TestApp, returnPath } from '../helpers/app.ts';
import { LOCALES, hasMessage, pickLocale, t as say } from '../../src/web/i18n.ts';
import en from '../../src/web/locales/en.ts';
import fr from '../../src/web/locales/fr.ts';
import { Fragment, h } from 'preact';
import { Text, render } from '../../src/web/html.tsx';
import { LanguageSwitch, tParts } from '../../src/web/shopper-page.tsx';
import { localizeProblemBody } from '../../src/checkout/shopper-problems.ts';

const card = (number: string) => ({ type: 'CARD', number, expiry_month: '12', expiry_year: '2031', cvv: '123' });
const GOOD = '4242424242424242';
const CHALLENGE = '4000000000003220';
const FR_BROWSER = { 'accept-language': 'fr-FR,fr;q=0.9,en;q=0.5' };
const EN_BROWSER = { 'accept-language': 'en-US,en;q=0.9' };

const htmlLang = (body: string) => /<html lang="([^"]+)">/.exec(body)?.[1];
const title = (body: string) => /<title>([^<]*)<\/title>/.exec(body)?.[1];
const setCookie = (headers: Record<string, unknown>) => [headers['set-cookie'] ?? []].flat().map(String).find((c) => c.startsWith('payd_lang='));
/** The links of a page's language switch: language -> [href, current]. */
function switchOf(body: string): { label: string; links: Record<string, [string, boolean]> } {
  const nav = /<nav class="payd-lang" aria-label="([^"]+)"[^>]*><ul>(.*?)<\/ul><\/nav>/.exec(body);
  assert.ok(nav, 'the page has the language switch');
  const links: Record<string, [string, boolean]> = {};
  for (const m of nav[2]!.matchAll(/<a href="([^"]+)" hreflang="(\w+)" lang="\w+"( aria-current="true")?>/g)) links[m[2]!] = [m[1]!.replace(/&amp;/g, '&'), !!m[3]];
  return { label: nav[1]!, links };
}

describe('shopper languages', () => {
  let t: TestApp;
  let m: Merchant;
  before(async () => {
    t = await createTestApp();
    m = await t.createMerchant('Boulangerie Ada');
  });
  after(() => t.close());

  const newSession = async (extra: Record<string, unknown> = {}) => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: m.auth, payload: { amount: 2500, currency: 'EUR', ...extra } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { id: string; widget: { data: string } };
  };
  const newLink = async (extra: Record<string, unknown> = {}) => {
    const res = await t.app.inject({ method: 'POST', url: '/v2/payment-links', headers: m.auth, payload: { amount: 1999, currency: 'EUR', ...extra } });
    assert.equal(res.statusCode, 200, res.body);
    const l = res.json() as { id: string; links: { customer_url: { href: string } } };
    return { id: l.id, path: new URL(l.links.customer_url.href).pathname };
  };
  const read = (data: string, headers: Record<string, string> = {}, query = '') =>
    t.app.inject({ url: `/checkout/v1/session${query}`, headers: { 'x-payd-session': data, ...headers } });
  const submit = (data: string, number: string, headers: Record<string, string> = {}, split?: unknown) => t.app.inject({
    method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': data, ...headers },
    payload: { split: split ?? [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card(number) }] },
  });

  it('every language has every message, with the same placeholders as English', () => {
    assert.deepEqual([...LOCALES], ['en', 'fr']);
    const holes = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((x) => x[1]).sort();
    for (const key of Object.keys(en.messages)) {
      assert.ok(hasMessage(key));
      const english = en.messages[key as keyof typeof en.messages];
      const french = fr.messages[key as keyof typeof en.messages];
      assert.ok(french.trim(), `fr.${key}`);
      assert.deepEqual(holes(french), holes(english), `placeholders of ${key}`);
    }
    assert.equal(Object.keys(fr.messages).length, Object.keys(en.messages).length);
  });

  it('decides in one order: explicit choice, then the merchant\'s customer.locale, then Accept-Language, then English', () => {
    assert.equal(pickLocale('fr', 'en', 'en'), 'en', 'the shopper\'s choice wins');
    assert.equal(pickLocale('en', 'fr-CA', undefined), 'fr', 'then the merchant\'s');
    assert.equal(pickLocale('en', 'fr', 'de'), 'fr', 'a choice payd does not speak is no choice');
    assert.equal(pickLocale('de, fr;q=0.3', undefined, undefined), 'fr');
    assert.equal(pickLocale('de', 'es', 'it'), 'en');
  });

  it('the hosted page follows the browser or the shopper\'s choice, keeps the choice in a cookie, and has a labelled switch', async () => {
    const english = await t.app.inject({ url: '/checkout/pay', headers: EN_BROWSER });
    assert.equal(htmlLang(english.body), 'en');
    assert.equal(title(english.body), 'Secure payment');
    assert.equal(setCookie(english.headers), undefined, 'no choice, no cookie');

    const french = await t.app.inject({ url: '/checkout/pay', headers: FR_BROWSER });
    assert.equal(htmlLang(french.body), 'fr');
    assert.equal(french.headers['content-language'], 'fr');
    assert.equal(title(french.body), 'Paiement sécurisé');
    assert.match(french.body, /<h1 data-payd-t="securePayment"[^>]*>Paiement sécurisé<\/h1>/, 'the widget can say the heading again in the session\'s language');
    const sw = switchOf(french.body);
    assert.equal(sw.label, 'Langue');
    assert.deepEqual(sw.links, { en: ['/checkout/pay?lang=en', false], fr: ['/checkout/pay?lang=fr', true] });
    assert.match(french.body, /lang="en"[^>]*>English<\/a>/, 'each language named in itself, marked with its lang');

    // The switch: ?lang=en on a French browser, kept in the cookie.
    const chosen = await t.app.inject({ url: '/checkout/pay?lang=en', headers: FR_BROWSER });
    assert.equal(htmlLang(chosen.body), 'en');
    const cookie = setCookie(chosen.headers);
    assert.match(String(cookie), /^payd_lang=en; Max-Age=31536000; Path=\/; HttpOnly; SameSite=Lax$/);
    const later = await t.app.inject({ url: '/checkout/pay', headers: { ...FR_BROWSER, cookie: 'other=1; payd_lang=en' } });
    assert.equal(htmlLang(later.body), 'en', 'the cookie keeps the choice');
    assert.equal(setCookie(later.headers), undefined, 'already kept: not set again');
    assert.equal(switchOf(later.body).links.en![1], true);
    // A language payd does not speak is ignored (not kept); a bad cookie too.
    const german = await t.app.inject({ url: '/checkout/pay?lang=de', headers: { ...FR_BROWSER, cookie: 'payd_lang=xx' } });
    assert.equal(htmlLang(german.body), 'fr');
    assert.equal(setCookie(german.headers), undefined);
    // The address of the old form keeps the choice through its redirect to the fragment.
    const old = await t.app.inject({ url: '/checkout/pay?session=abc&lang=fr' });
    assert.equal(old.statusCode, 303);
    assert.equal(old.headers.location, '/checkout/pay?lang=fr#session=abc');
  });

  it('the widget\'s session read: the shopper\'s choice (lang or cookie) over the merchant\'s customer.locale over the browser', async () => {
    const s = await newSession({ customer: { locale: 'fr-FR' } });
    const merchant = await read(s.widget.data, EN_BROWSER);
    assert.equal(merchant.json().locale, 'fr');
    assert.equal(merchant.headers['content-language'], 'fr');
    assert.equal((await read(s.widget.data, { ...EN_BROWSER, cookie: 'payd_lang=en' })).json().locale, 'en');
    assert.equal((await read(s.widget.data, FR_BROWSER, '?lang=en')).json().locale, 'en');
    assert.equal((await read(s.widget.data, EN_BROWSER, '?lang=de')).json().locale, 'fr', 'an unknown choice is ignored');
    const plain = await newSession();
    assert.equal((await read(plain.widget.data, FR_BROWSER)).json().locale, 'fr');
    assert.equal((await read(plain.widget.data, {})).json().locale, 'en');
    expectProblem(await read(plain.widget.data, {}, `?lang=${'x'.repeat(40)}`), 400);
  });

  it('the card frame is written in the language the session read decides, with the same inputs, so its fields need not wait for the session', async () => {
    const frame = (id: string, headers: Record<string, string> = {}, query = '') => t.app.inject({ url: `/checkout/card-frame?s=${id}${query}`, headers });
    const s = await newSession({ customer: { locale: 'fr-FR' } });
    const cases: Array<[string, Record<string, string>, string]> = [[s.id, EN_BROWSER, ''], [s.id, { ...EN_BROWSER, cookie: 'payd_lang=en' }, ''], [s.id, FR_BROWSER, '&lang=en'], [s.id, EN_BROWSER, '&lang=de']];
    const plain = await newSession();
    cases.push([plain.id, FR_BROWSER, ''], [plain.id, {}, '']);
    for (const [id, headers, query] of cases) {
      const data = id === s.id ? s.widget.data : plain.widget.data;
      const expected = (await read(data, headers, query.replace('&', '?'))).json().locale as string;
      const res = await frame(id, headers, query);
      assert.equal(res.statusCode, 200);
      assert.equal(htmlLang(res.body), expected, `${id === s.id ? 'fr customer' : 'no customer'} ${JSON.stringify(headers)} ${query}`);
      assert.equal(title(res.body), say(expected as 'en' | 'fr', 'cardDetails'));
      assert.equal(res.headers['content-language'], expected);
      assert.match(String(res.headers.vary), /accept-language/i, 'a cache keeps one copy per browser language');
    }
    assert.equal(htmlLang((await frame('not-a-session', FR_BROWSER)).body), 'fr', 'no session: the browser\'s');
    expectProblem(await frame(s.id, {}, `&lang=${'x'.repeat(40)}`), 400);
  });

  it('says the checkout API\'s refusals to the shopper in the shopper\'s language; the merchant\'s API stays English', async () => {
    // A closed session, in the merchant's language for the customer.
    const s = await newSession({ customer: { locale: 'fr' } });
    assert.equal((await submit(s.widget.data, GOOD)).json().authorization_status, 'AUTHORIZED');
    const again = expectProblem(await submit(s.widget.data, GOOD, EN_BROWSER), 400);
    assert.equal(again.detail, 'Cette commande est déjà payée.');
    assert.equal(again.title, 'This checkout takes no further payment', 'title and type stay as they are, for programs');
    assert.equal(again.type, 'urn:eu.service:client-session-status');
    const chosen = await t.app.inject({
      method: 'POST', url: '/checkout/v1/session/payments?lang=en', headers: { 'x-payd-session': s.widget.data },
      payload: { split: [{ partner: 'card-sim', method: 'CARD', amount: 2500, instrument: card(GOOD) }] },
    });
    assert.equal(expectProblem(chosen, 400).detail, 'This order is already paid.');
    assert.equal(chosen.headers['content-language'], 'en');

    // A split outside the offer, in the browser's language: the field is still named.
    const plain = await newSession();
    const ineligible = expectProblem(await submit(plain.widget.data, GOOD, FR_BROWSER, [{ partner: 'nope-sim', method: 'CARD', amount: 2500, instrument: card(GOOD) }]), 400);
    assert.equal(ineligible.detail, 'Ce moyen de paiement (nope-sim/CARD) n’est pas proposé pour cette commande.');
    assert.deepEqual(ineligible.invalid_params, [{ name: 'split[0]', in: 'body', reason: ineligible.detail }]);
    const ineligibleEn = expectProblem(await submit(plain.widget.data, GOOD, EN_BROWSER, [{ partner: 'nope-sim', method: 'CARD', amount: 2500, instrument: card(GOOD) }]), 400);
    assert.equal(ineligibleEn.invalid_params?.[0]?.reason, 'nope-sim/CARD is not an eligible solution of this session');

    // A body the schema refuses: the fields named, the words French.
    const invalid = await t.app.inject({
      method: 'POST', url: '/checkout/v1/session/payments', headers: { 'x-payd-session': plain.widget.data, ...FR_BROWSER },
      payload: { split: [{ partner: 'card-sim', method: 'CARD', amount: -1 }] },
    });
    const body = expectProblem(invalid, 400);
    assert.equal(body.detail, 'Certaines données du paiement ne sont pas valides.');
    assert.ok(body.invalid_params?.length);
    for (const p of body.invalid_params!) assert.equal(p.reason, `La valeur de ${p.name} n’est pas valide.`);

    // A credential payd did not make: the browser's language.
    const forged = expectProblem(await read('bm90LWEtY3JlZGVudGlhbA', FR_BROWSER), 401);
    assert.equal(forged.detail, 'Ce formulaire de paiement n’est pas valide : ouvrez le lien complet qui vous a été donné.');
    assert.equal(expectProblem(await read('bm90LWEtY3JlZGVudGlhbA', EN_BROWSER), 401).detail, 'The checkout credential is missing or not valid.');

    // The merchant's API: English whatever the browser says.
    const merchantApi = expectProblem(await t.app.inject({ method: 'POST', url: '/v2/client-sessions', headers: { ...m.auth, ...FR_BROWSER, cookie: 'payd_lang=fr' }, payload: { currency: 'EUR' } }), 400);
    assert.match(String(merchantApi.detail), /^The request body is invalid/);
    assert.equal(merchantApi.invalid_params?.[0]?.reason, 'is required');
  });

  it('puts every payment-link page in the link customer\'s language: payable, paid, cancelled, expired; not found in the browser\'s', async () => {
    const link = await newLink({ customer: { locale: 'fr-FR' }, order: { reference: 'cmd-12' } });
    const page = await t.app.inject({ url: link.path, headers: EN_BROWSER });
    assert.equal(page.statusCode, 200);
    assert.equal(htmlLang(page.body), 'fr');
    assert.equal(title(page.body), 'Payer Boulangerie Ada');
    assert.match(page.body, /Commande cmd-12\. Montant dû : 19,99\s€\./);
    assert.deepEqual(switchOf(page.body).links, { en: [`${link.path}?lang=en`, false], fr: [`${link.path}?lang=fr`, true] });
    // The shopper switches to English: this page and the next ones.
    const switched = await t.app.inject({ url: `${link.path}?lang=en`, headers: EN_BROWSER });
    assert.equal(htmlLang(switched.body), 'en');
    assert.match(switched.body, /Order cmd-12\. Amount due: €19\.99\./);
    assert.match(String(setCookie(switched.headers)), /^payd_lang=en;/);

    const data = /data-payd-session="([^"]+)"/.exec(page.body)![1]!;
    assert.equal((await read(data, EN_BROWSER)).json().locale, 'fr', 'the widget on the page speaks the link customer\'s language too');
    // A refused input gives the link back (it once waited forever on PGlite) and is said in French.
    const wrong = expectProblem(await submit(data, GOOD, EN_BROWSER), 400);
    assert.equal(wrong.detail, 'Certaines données du paiement ne sont pas valides.');
    assert.deepEqual(wrong.invalid_params, [{ name: 'split', in: 'body', reason: 'La valeur de split n’est pas valide.' }]);
    assert.equal((await submit(data, GOOD, {}, [{ partner: 'card-sim', method: 'CARD', amount: 1999, instrument: card(GOOD) }])).json().authorization_status, 'AUTHORIZED');
    const paid = await t.app.inject({ url: link.path, headers: EN_BROWSER });
    assert.equal(paid.statusCode, 200);
    assert.equal(htmlLang(paid.body), 'fr');
    assert.equal(title(paid.body), 'Déjà payé');
    assert.match(paid.body, /Ce lien de paiement de 19,99\s€ à Boulangerie Ada a été payé\./);
    const paidEn = await t.app.inject({ url: link.path, headers: { ...FR_BROWSER, cookie: 'payd_lang=en' } });
    assert.equal(title(paidEn.body), 'Already paid');
    assert.match(paidEn.body, /This payment link of €19\.99 to Boulangerie Ada has been paid/);

    const cancelled = await newLink({ customer: { locale: 'fr' } });
    await t.app.inject({ method: 'POST', url: `/v2/payment-links/${cancelled.id}/cancel`, headers: m.auth });
    const cancelledPage = await t.app.inject({ url: cancelled.path, headers: EN_BROWSER });
    assert.equal(cancelledPage.statusCode, 410);
    assert.equal(htmlLang(cancelledPage.body), 'fr');
    assert.equal(title(cancelledPage.body), 'Lien de paiement annulé');
    assert.ok(switchOf(cancelledPage.body));

    const expired = await newLink({ customer: { locale: 'fr' } });
    await t.testDb.db.query(`UPDATE payment_links SET expires_at = now() - interval '1 minute', created_at = now() - interval '2 minutes' WHERE id = $1`, [expired.id]);
    const expiredPage = await t.app.inject({ url: expired.path, headers: EN_BROWSER });
    assert.equal(expiredPage.statusCode, 410);
    assert.equal(title(expiredPage.body), 'Lien de paiement expiré');
    assert.match(expiredPage.body, /a expiré et n’accepte aucun paiement/);

    const missing = await t.app.inject({ url: '/pay/00000000-0000-4000-8000-000000000000', headers: FR_BROWSER });
    assert.equal(missing.statusCode, 404);
    assert.equal(htmlLang(missing.body), 'fr');
    assert.equal(title(missing.body), 'Lien de paiement introuvable');
    const missingEn = await t.app.inject({ url: '/pay/00000000-0000-4000-8000-000000000000?lang=en', headers: FR_BROWSER });
    assert.equal(title(missingEn.body), 'Payment link not found');
  });

  it('the outcome pages: the session\'s language, the switch keeping the signed address, a wrong address in the browser\'s', async () => {
    const s = await newSession({ customer: { locale: 'fr' } });
    const path = returnPath(s.id);
    const page = await t.app.inject({ url: path, headers: EN_BROWSER });
    assert.equal(htmlLang(page.body), 'fr');
    assert.equal(page.headers['content-language'], 'fr');
    assert.match(page.body, /Aucun paiement n’a été fait\./);
    const sw = switchOf(page.body);
    const mac = new URL(path, 'http://x').searchParams.get('t');
    assert.equal(new URL(sw.links.en![0], 'http://x').searchParams.get('t'), mac, 'the switch keeps the address\'s MAC');
    const english = await t.app.inject({ url: sw.links.en![0], headers: EN_BROWSER });
    assert.equal(english.statusCode, 200);
    assert.equal(htmlLang(english.body), 'en');
    assert.match(english.body, /No payment was made\./);

    const wrong = await t.app.inject({ url: `/checkout/return/${s.id}`, headers: FR_BROWSER });
    assert.equal(wrong.statusCode, 404);
    assert.equal(title(wrong.body), 'Paiement introuvable');
    assert.equal(htmlLang(wrong.body), 'fr');
  });

  it('the 3-D Secure pages (the simulated bank\'s and payd\'s return in the widget\'s frame) speak the customer\'s language, or the shopper\'s choice', async () => {
    const s = await newSession({ customer: { locale: 'fr-FR' }, integration_mode: 'EMBEDDED' });
    const pending = (await submit(s.widget.data, CHALLENGE, EN_BROWSER)).json();
    assert.equal(pending.authorization_status, 'PENDING');
    const acs = new URL(pending.redirection.url).pathname;
    const page = await t.app.inject({ url: acs, headers: EN_BROWSER });
    assert.equal(htmlLang(page.body), 'fr');
    assert.equal(title(page.body), 'Confirmez votre paiement');
    assert.match(page.body, /Votre banque vous demande de confirmer un paiement de <strong>25,00\s€<\/strong>\./);
    assert.match(page.body, />Approuver le paiement<\/button>/);
    assert.ok(switchOf(page.body));
    const chosen = await t.app.inject({ url: `${acs}?lang=en`, headers: FR_BROWSER });
    assert.equal(title(chosen.body), 'Confirm your payment');
    assert.match(chosen.body, new RegExp(`action="${acs}\\?lang=en"`), 'the form keeps the choice');

    const done = await t.app.inject({ method: 'POST', url: acs, headers: { 'content-type': 'application/x-www-form-urlencoded', ...EN_BROWSER }, payload: 'result=pass' });
    assert.equal(htmlLang(done.body), 'fr');
    assert.equal(title(done.body), 'Authentification terminée');
    const next = /http-equiv="refresh" content="0;url=([^"]+)"/.exec(done.body)![1]!.replace(/&amp;/g, '&');
    const inFrame = await t.app.inject({ url: new URL(next).pathname + new URL(next).search, headers: { ...EN_BROWSER, 'sec-fetch-dest': 'iframe' } });
    assert.equal(inFrame.statusCode, 200);
    assert.equal(htmlLang(inFrame.body), 'fr');
    assert.equal(title(inFrame.body), 'Confirmez le paiement auprès de votre banque');
    const over = await t.app.inject({ url: acs, headers: EN_BROWSER });
    assert.equal(title(over.body), 'Authentification déjà terminée');

    const nothing = await t.app.inject({ url: '/sim/acs/00000000-0000-4000-8000-000000000000', headers: FR_BROWSER });
    assert.equal(nothing.statusCode, 404);
    assert.equal(title(nothing.body), 'Aucune authentification en attente');
  });

  it('builds the switch and HTML messages safely, and localizes problem bodies by kind', () => {
    const sw = render(LanguageSwitch({ url: '/pay/x?t=a"b&lang=fr&z=1', current: 'en' }));
    assert.match(sw, /href="\/pay\/x\?t=a%22b&amp;lang=fr&amp;z=1"/);
    assert.match(sw, /aria-label="Language"/);
    const message = (...a: Parameters<typeof tParts>) => render(h(Fragment, null, ...tParts(...a)));
    assert.equal(message('fr', 'acsAsk', { amount: h('strong', null, '1 €') }), 'Votre banque vous demande de confirmer un paiement de <strong>1 €</strong>.');
    assert.equal(message('en', 'linkPaidText', { amount: h(Text, { value: '<x>' }), merchant: 'M' }), 'This payment link of &lt;x&gt; to M has been paid. Nothing more is due.');
    const base = { type: 'urn:eu.service:x', title: 'X', instance: '/checkout/v1/session' };
    assert.equal(localizeProblemBody({ ...base, status: 429, detail: 'Too many' }, 'fr').detail, say('fr', 'problemTooMany'));
    assert.equal(localizeProblemBody({ ...base, status: 503, detail: 'down' }, 'fr').detail, say('fr', 'problemUnavailable'));
    assert.equal(localizeProblemBody({ ...base, status: 409, detail: 'busy' }, 'fr').detail, say('fr', 'problemConflict'));
    assert.equal(localizeProblemBody({ ...base, status: 400, detail: 'no' }, 'fr').detail, say('fr', 'problemOther'));
    assert.deepEqual(localizeProblemBody({ ...base, status: 400, detail: 'no' }, 'en'), { ...base, status: 400, detail: 'no' });
  });
});
