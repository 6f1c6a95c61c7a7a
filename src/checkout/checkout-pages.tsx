// The checkout's pages on the web layer (src/web): the hosted page, the outcome pages and
// their receipt, the 3-D Secure return in the widget's frame, and the card frame. Each
// is in the shopper's language (src/web/language.ts) with the language switch, but the
// card frame, whose script says its words in the session's language.
import type { FastifyReply } from 'fastify';
import type { VNode } from 'preact';
import {
  Document, type EncodedPage, type Locale, type PageLanguage, ShopperPage, Text, csp, cspHash, intlLocale, renderPage, sendHtml, sendShopperMessage, sendShopperPage, t,
} from '../web/index.ts';
import { formatAmount } from '../money/currency.ts';
import type { CheckoutService } from './checkout.service.ts';

/** The widget mounted on one of payd's pages: its script at the end of the body, with where to mount and where the credential is. */
export const widgetScript = (data: Record<string, string>) => ({ src: '/checkout/widget.js', data: { ...data, 'payd-mount': '#payd-checkout' } });

/**
 * The hosted page: the widget takes the session credential from the page address's
 * fragment (#session=...), never sent to any server. The server cannot know the session,
 * so the page is in the shopper's choice or the browser's language; the widget says its
 * heading and intro again (data-payd-t) in the session's language once it has read it.
 */
export function sendHostedPage(reply: FastifyReply, lang: PageLanguage): FastifyReply {
  const L = lang.locale;
  return sendShopperPage(reply, 200, (
    <ShopperPage lang={lang} title={t(L, 'securePayment')} titleKey="securePayment" bodyScripts={[widgetScript({ 'payd-session-from': 'fragment' })]}>
      <p class="muted" data-payd-t="securePaymentIntro">{t(L, 'securePaymentIntro')}</p>
      <div class="card-box" id="payd-checkout"></div>
    </ShopperPage>
  ), { frameSrc: "'self'" });
}

export type Receipt = NonNullable<Awaited<ReturnType<CheckoutService['receipt']>>>;

/** The receipt of an authorized payment on payd's own outcome page (the merchant's and the order's words as Text: every markup character an entity). */
function ReceiptBox({ L, r }: { L: Locale; r: Receipt }): VNode {
  const date = new Intl.DateTimeFormat(intlLocale(L), { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' }).format(r.date) + ' UTC';
  const rows: Array<[string, string]> = [
    [t(L, 'paidTo'), r.merchant],
    [t(L, 'amount'), formatAmount(r.amount, r.currency, intlLocale(L))],
    ...(r.order.reference ? [[t(L, 'orderLabel'), r.order.reference] as [string, string]] : []),
    [t(L, 'date'), date],
    ...(r.cards.length ? [[t(L, 'paidWith'), r.cards.join(', ')] as [string, string]] : []),
    [t(L, 'reference'), r.payment_id],
  ];
  return (
    <section class="card-box" aria-label={t(L, 'receipt')}>
      <h2>{t(L, 'receipt')}</h2>
      <dl class="payd-receipt">{rows.map(([k, v]) => <><dt>{k}</dt><dd><Text value={v} /></dd></>)}</dl>
      {r.order.items.length ? <ul class="payd-items">{r.order.items.map((i) => <li><Text value={i.name} />{i.quantity > 1 ? ` × ${i.quantity}` : ''}</li>)}</ul> : null}
    </section>
  );
}

/** What the outcome page (/checkout/return/:id) says. */
export type Outcome =
  | { kind: 'accepted'; receipt: Receipt | undefined }
  | { kind: 'pending' }
  | { kind: 'notCompleted'; attempted: boolean; retryUrl: string | undefined };

export function sendOutcomePage(reply: FastifyReply, lang: PageLanguage, o: Outcome): FastifyReply {
  const L = lang.locale;
  if (o.kind === 'accepted') {
    return sendShopperMessage(reply, lang, 200, t(L, 'accepted'), <>
      <p role="status">{t(L, 'acceptedText')}</p>
      {o.receipt ? <ReceiptBox L={L} r={o.receipt} /> : null}
      <p class="muted">{t(L, 'mayClose')}</p>
    </>);
  }
  if (o.kind === 'pending') return sendShopperMessage(reply, lang, 200, t(L, 'beingConfirmed'), <p role="status">{t(L, 'beingConfirmedText')}</p>);
  return sendShopperMessage(reply, lang, 200, t(L, 'notCompleted'), <>
    <p role="status">{t(L, o.attempted ? 'notCompletedText' : 'noPayment')}</p>
    {o.retryUrl ? <p><a href={o.retryUrl} id="payd-retry">{t(L, 'tryAgain')}</a></p> : null}
  </>);
}

/** An outcome address that opens nothing (a wrong MAC, an unknown payment). */
export function sendNotHere(reply: FastifyReply, lang: PageLanguage, key: 'paymentNotFoundText' | 'paymentMissingText'): FastifyReply {
  return sendShopperMessage(reply, lang, 404, t(lang.locale, 'paymentNotFound'), <p>{t(lang.locale, key)}</p>);
}

/**
 * The 3-D Secure return in the widget's modal frame: tells the widget the challenge is
 * over (3ds-done.js); at the top of a browser it goes on to the return address (also a link).
 */
export function sendThreeDsDone(reply: FastifyReply, lang: PageLanguage, next: string, frameAncestors: string): FastifyReply {
  const L = lang.locale;
  return sendShopperPage(reply, 200, (
    <ShopperPage lang={lang} title={t(L, 'threeDsTitle')} bodyScripts={[{ src: '/checkout/3ds-done.js', data: { next } }]}>
      <p role="status">{t(L, 'checking')}</p>
      <p><a href={next} id="payd-continue">{t(L, 'continue')}</a></p>
    </ShopperPage>
  ), { frameAncestors });
}

/** The end of a 3-D Secure challenge outside any session's page: what became of the card check. */
export function sendThreeDsFinished(reply: FastifyReply, lang: PageLanguage, key: 'cardConfirmed' | 'cardNotConfirmed' | 'noPaymentHere'): FastifyReply {
  return sendShopperMessage(reply, lang, 200, t(lang.locale, 'authFinished'), <p role="status">{t(lang.locale, key)}</p>);
}

/**
 * The card frame (/checkout/card-frame?s={session id}): one document for every session in
 * a language (the parent's origin and the credential come by the fragment and
 * postMessage; its script writes the fields at once, in the document's language),
 * rendered once per version of its script and style, which are written in it (no
 * request for either once the frame's renderer has the document) and allowed by their
 * hashes in its CSP, never 'unsafe-inline'. Only its headers differ: who may embed it
 * (the session's merchant's checkout origins). Cacheable, as it holds nothing of the
 * session (the hashes go with the version); it varies with Accept-Language, which may
 * decide its language.
 */
export interface CardFrameDocument { html: string; hashes: { scripts: string[]; styles: string[] } }
export function cardFrameDocument(script: string, style: string, L: Locale): CardFrameDocument {
  return {
    html: renderPage(<Document lang={L} title={t(L, 'cardDetails')} stylesheets={[]} inlineStyle={style} inlineBodyScript={script} />),
    hashes: { scripts: [cspHash(script)], styles: [cspHash(style)] },
  };
}

export function sendCardFrame(reply: FastifyReply, frameAncestors: string, L: Locale, page: EncodedPage, hashes: CardFrameDocument['hashes']): FastifyReply {
  reply.header('content-language', L).header('vary', 'Accept-Language');
  return sendHtml(reply, 200, page, {
    csp: csp({ connect: true, formAction: 'none', frameAncestors, inlineHashes: hashes }),
    cacheControl: 'public, max-age=300',
    frameable: true,
  });
}
