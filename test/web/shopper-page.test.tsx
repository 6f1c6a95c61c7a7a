// src/web's shopper page: the document in the shopper's language with the switch, the CSP
// shopper pages share (framed only where the page says), the payd_lang cookie kept over
// https with Secure, and Text's strict escaping.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { ShopperPage, Text, pageLanguage, render, sendShopperMessage, sendShopperPage, t, tParts, webCookies } from '../../src/web/index.ts';

async function testApp() {
  const app = Fastify({ trustProxy: true });
  await app.register(webCookies, { secret: Buffer.alloc(32, 1) });
  app.get('/page', async (request, reply) => {
    const lang = pageLanguage(request, reply);
    return sendShopperMessage(reply, lang, 200, t(lang.locale, 'accepted'), <p role="status">{tParts(lang.locale, 'acsAsk', { amount: <strong>1 €</strong> })}</p>);
  });
  app.get('/framed', async (request, reply) => {
    const lang = pageLanguage(request, reply);
    return sendShopperPage(reply, 200, <ShopperPage lang={lang} title="Framed" titleKey="securePayment" bodyScripts={[{ src: '/x.js', data: { next: '/a?b=1&c=2' } }]} />,
      { frameAncestors: "'self' https://shop.example", frameSrc: "'self'" });
  });
  return app;
}

describe('shopper pages on the web layer (src/web/shopper-page.tsx)', () => {
  it('renders the document in the shopper\'s language, with the switch and the shared CSP; never framed unless said', async () => {
    const app = await testApp();
    const res = await app.inject({ url: '/page?lang=fr', headers: { 'accept-language': 'en' } });
    assert.equal(res.statusCode, 200);
    assert.ok(res.body.startsWith('<!doctype html>\n<html lang="fr">'));
    assert.equal(res.headers['content-language'], 'fr');
    assert.match(res.body, /<link rel="stylesheet" href="\/checkout\/checkout.css"\/>/);
    assert.match(res.body, /<main aria-labelledby="payd-title"><nav class="payd-lang" aria-label="Langue" data-payd-t-label="language"><ul>.*<\/ul><\/nav><h1 id="payd-title">Paiement accepté<\/h1>/);
    assert.match(res.body, /<p role="status">Votre banque vous demande de confirmer un paiement de <strong>1 €<\/strong>\.<\/p>/);
    assert.equal(res.headers['content-security-policy'], "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
    assert.equal(res.headers['x-frame-options'], 'DENY');
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers['set-cookie'], 'payd_lang=fr; Max-Age=31536000; Path=/; HttpOnly; SameSite=Lax');
    const https = await app.inject({ url: '/page?lang=en', headers: { 'x-forwarded-proto': 'https' } });
    assert.equal(https.headers['set-cookie'], 'payd_lang=en; Max-Age=31536000; Path=/; HttpOnly; Secure; SameSite=Lax');
    await app.close();
  });

  it('a framed page names who may frame it, and what it frames; its title key and scripts go in the document', async () => {
    const app = await testApp();
    const res = await app.inject({ url: '/framed', headers: { cookie: 'payd_lang=fr' } });
    assert.equal(res.headers['content-security-policy'], "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'self' https://shop.example; frame-src 'self'");
    assert.equal(res.headers['x-frame-options'], undefined);
    assert.equal(res.headers['set-cookie'], undefined, 'the choice is already kept');
    assert.match(res.body, /<h1 data-payd-t="securePayment" id="payd-title">Framed<\/h1>/);
    assert.match(res.body, /<script src="\/x.js" data-next="\/a\?b=1&amp;c=2"><\/script><\/body>/);
    await app.close();
  });

  it('Text puts every markup character as an entity, without an element around it', () => {
    assert.equal(render(<li><Text value={`<b>Tea</b> & "Co" 'x'`} /> × 2</li>), '<li>&lt;b&gt;Tea&lt;/b&gt; &amp; &quot;Co&quot; &#39;x&#39; × 2</li>');
  });
});
