// The checkout's files: widget.js and its stylesheet (loaded by merchant pages), the card
// frame (payd's page holding the card fields, which the widget embeds) with its script and
// style, payd's shopper pages' stylesheet, and the 3-D Secure return page's script.
// Scripts and stylesheets are served compressed as the browser accepts (brotli, else gzip;
// made once: widget-bundle.ts), with Vary: Accept-Encoding and an ETag per encoding, 304 on
// If-None-Match. An address the page cannot know in advance (widget.js, which merchants
// embed) is cached five minutes, then revalidated; the card frame's script and style are
// written in its document (compressed the same way; its CSP allows them by hash), and
// served as files too, with their version (?v=) for a year, for documents of an earlier version.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { CheckoutService } from './checkout.service.ts';
import { type BrowserScript, type Compressed, type Encoding, browserBundle, compressedForms } from './widget-bundle.ts';
import { THREE_DS_DONE } from './widget/frame-protocol.ts';
import { CARD_FRAME_CSS, CHECKOUT_CSS, WIDGET_CSS } from './styles.ts';
import { type CardFrameDocument, cardFrameDocument, sendCardFrame } from './checkout-pages.tsx';
import { RUNNING_BUILT } from '../platform/paths.ts';
import { type Locale, languageChoice, shopperLocale } from '../web/index.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CACHED = 'public, max-age=300';
const VERSIONED = 'public, max-age=31536000, immutable';
const JS = 'application/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** The encoding to answer in: brotli, else gzip, as Accept-Encoding allows (q-values, *); else none. */
export function pickEncoding(header: string | string[] | undefined): Encoding {
  const q = new Map<string, number>();
  for (const part of (Array.isArray(header) ? header.join(',') : header ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';').map((x) => x.trim());
    if (!name) continue;
    const given = params.find((x) => x.startsWith('q='));
    const value = given ? Number(given.slice(2)) : 1;
    q.set(name, Number.isFinite(value) ? value : 0);
  }
  const of = (e: string) => q.get(e) ?? q.get('*') ?? 0;
  if (of('br') > 0 && of('br') >= of('gzip')) return 'br';
  return of('gzip') > 0 ? 'gzip' : 'identity';
}

/** If-None-Match names this ETag (or is *); weak forms compare as the strong one (RFC 9110 weak comparison). */
const notModified = (header: string | string[] | undefined, etag: string) => {
  const tags = (Array.isArray(header) ? header.join(',') : header ?? '').split(',').map((x) => x.trim().replace(/^W\//, ''));
  return tags.includes('*') || tags.includes(etag);
};

/** Sends a text in the encoding the browser takes best, with its ETag; 304 when the browser has that one. */
function sendCompressed(request: FastifyRequest, reply: FastifyReply, asset: Compressed, type: string): FastifyReply {
  const encoding = pickEncoding(request.headers['accept-encoding']);
  const { body, etag } = asset.forms[encoding];
  const version = (request.query as { v?: unknown } | undefined)?.v;
  reply.header('vary', 'Accept-Encoding').header('etag', etag).header('cache-control', version === asset.version ? VERSIONED : CACHED);
  if (notModified(request.headers['if-none-match'], etag)) return reply.code(304).send();
  if (encoding !== 'identity') reply.header('content-encoding', encoding);
  return reply.type(type).send(body);
}

/** A stylesheet's forms, made once. */
const once = (text: string) => {
  let forms: Promise<Compressed> | undefined;
  return () => (forms ??= compressedForms(text));
};
const cardFrameCss = once(CARD_FRAME_CSS);
const checkoutCss = once(CHECKOUT_CSS);
const widgetCss = once(WIDGET_CSS);

/**
 * The card frame's document in each language, with its script and style written in it,
 * compressed; made once per version of the two (and language, on first use).
 */
type FrameDoc = Promise<{ forms: Compressed; hashes: CardFrameDocument['hashes'] }>;
let cardFrame: { version: string; docs: Map<Locale, FrameDoc> } | undefined;
async function cardFrameDoc(locale: Locale): FrameDoc {
  const [js, style] = await Promise.all([browserBundle('card-frame'), cardFrameCss()]);
  const version = `${js.version} ${style.version}`;
  if (cardFrame?.version !== version) cardFrame = { version, docs: new Map() };
  const docs = cardFrame.docs;
  let doc = docs.get(locale);
  if (!doc) {
    const { html, hashes } = cardFrameDocument(js.code, CARD_FRAME_CSS, locale);
    const made: FrameDoc = compressedForms(html).then((forms) => ({ forms, hashes }));
    docs.set(locale, doc = made);
    made.catch(() => { if (docs.get(locale) === made) docs.delete(locale); });
  }
  return doc;
}

const versioned = { querystring: Type.Object({ v: Type.Optional(Type.String({ maxLength: 64 })) }) };

export async function assetRoutes(root: FastifyInstance, { checkout }: { checkout: CheckoutService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  const script = (name: BrowserScript) => async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('cross-origin-resource-policy', 'cross-origin');
    return sendCompressed(request, reply, await browserBundle(name), JS);
  };
  const css = (forms: () => Promise<Compressed>) => async (request: FastifyRequest, reply: FastifyReply) =>
    sendCompressed(request, reply, await forms(), CSS);

  app.get('/checkout/widget.js', { schema: { hide: true } }, script('widget'));

  // The card frame: any page may embed it (as Stripe Elements). ?s= the session id (not
  // its credential), read from the credential by the widget: who may embed the frame
  // follows the session's merchant; the frame accepts only that session's credential
  // (card-frame.ts), so leaving it out gains nothing. Its script and style are in its
  // document (compressed as the browser accepts), made when the built server starts.
  // It is in the session's language, decided as the widget's session read decides it
  // (?lang= the widget's locale option, else the session's customer.locale, else the
  // browser's), so that its fields are written before the widget has read the session.
  if (RUNNING_BUILT) void cardFrameDoc('en').catch(() => undefined);
  app.get('/checkout/card-frame', { schema: { hide: true, querystring: Type.Object({ s: Type.Optional(Type.String({ maxLength: 100 })), lang: Type.Optional(Type.String({ maxLength: 35 })) }) } }, async (request, reply) => {
    const session = UUID_RE.test(request.query.s ?? '') ? request.query.s : undefined;
    const frame = await checkout.framing(session);
    const locale = shopperLocale(languageChoice(request), frame.customerLocale);
    const doc = await cardFrameDoc(locale);
    const encoding = pickEncoding(request.headers['accept-encoding']);
    return sendCardFrame(reply, frame.frameAncestors, locale, { body: doc.forms.forms[encoding].body, encoding }, doc.hashes);
  });
  // The frame's script and style as files too: a frame document of an earlier version, still in a browser's cache, names them.
  app.get('/checkout/card-frame.js', { schema: { hide: true, ...versioned } }, script('card-frame'));
  app.get('/checkout/card-frame.css', { schema: { hide: true, ...versioned } }, css(cardFrameCss));
  // The 3-D Secure return page, in the widget's modal frame, tells the widget the challenge is over (and nothing else).
  app.get('/checkout/3ds-done.js', { schema: { hide: true } }, async (_request, reply) =>
    reply.type(JS).header('cache-control', CACHED)
      .send(`(function () {
  var next = document.currentScript && document.currentScript.getAttribute('data-next');
  if (window.parent !== window) window.parent.postMessage({ type: ${JSON.stringify(THREE_DS_DONE)} }, '*');
  else if (next && /^https?:/.test(next)) window.location.replace(next);
})();
`));

  app.get('/checkout/checkout.css', { schema: { hide: true } }, css(checkoutCss));
  app.get('/checkout/widget.css', { schema: { hide: true } }, async (request, reply) => {
    reply.header('access-control-allow-origin', '*').header('cross-origin-resource-policy', 'cross-origin');
    return sendCompressed(request, reply, await widgetCss(), CSS);
  });
}
