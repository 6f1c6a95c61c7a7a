// The payment link's customer pages on the web layer (src/web), in the language of the
// link's customer unless the shopper chose: the widget on a session of the link, or what
// became of the link (paid, cancelled, expired, busy, unknown).
import type { FastifyReply } from 'fastify';
import type { ComponentChildren } from 'preact';
import { type PageLanguage, ShopperPage, sendShopperMessage, sendShopperPage, t } from '../web/index.ts';

/** The link's checkout: the widget mounted for the session credential written in the page. */
export function sendLinkCheckout(reply: FastifyReply, lang: PageLanguage, p: { title: string; intro: string; widgetData: string }): FastifyReply {
  return sendShopperPage(reply, 200, (
    <ShopperPage lang={lang} title={p.title} bodyScripts={[{ src: '/checkout/widget.js', data: { 'payd-session': p.widgetData, 'payd-mount': '#payd-checkout' } }]}>
      <p class="muted">{p.intro}</p>
      <div class="card-box" id="payd-checkout"></div>
    </ShopperPage>
  ), { frameSrc: "'self'" });
}

/** A link that takes no payment now: what became of it. */
export const sendLinkStatus = (reply: FastifyReply, lang: PageLanguage, status: number, title: string, text: ComponentChildren): FastifyReply =>
  sendShopperMessage(reply, lang, status, title, <p role="status">{text}</p>);

/** No such link. */
export const sendLinkNotFound = (reply: FastifyReply, lang: PageLanguage): FastifyReply =>
  sendShopperMessage(reply, lang, 404, t(lang.locale, 'linkNotFoundTitle'), <p>{t(lang.locale, 'linkNotFoundText')}</p>);
