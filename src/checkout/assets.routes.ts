// The checkout's files: widget.js and its stylesheet (loaded by merchant pages), the card
// frame (payd's page holding the card fields, which the widget embeds) with its script and
// style, payd's shopper pages' stylesheet, and the 3-D Secure return page's script.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { CheckoutService } from './checkout.service.ts';
import { type BrowserScript, browserBundle } from './widget-bundle.ts';
import { THREE_DS_DONE } from './widget/frame-protocol.ts';
import { CARD_FRAME_CSS, CHECKOUT_CSS, WIDGET_CSS } from './styles.ts';
import { sendCardFrame } from './checkout-pages.tsx';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CACHED = 'public, max-age=300';

export async function assetRoutes(root: FastifyInstance, { checkout }: { checkout: CheckoutService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  const script = (name: BrowserScript) => async (request: { headers: Record<string, unknown> }, reply: FastifyReply) => {
    const { code, etag } = await browserBundle(name);
    reply.header('etag', etag).header('cache-control', CACHED).header('cross-origin-resource-policy', 'cross-origin');
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply.type('application/javascript; charset=utf-8').send(code);
  };
  const css = (text: string) => async (_request: unknown, reply: FastifyReply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', CACHED).send(text);

  app.get('/checkout/widget.js', { schema: { hide: true } }, script('widget'));

  // The card frame: any page may embed it (as Stripe Elements). ?s= the session id (not
  // its credential), read from the credential by the widget: who may embed the frame
  // follows the session's merchant; the frame accepts only that session's credential
  // (card-frame.ts), so leaving it out gains nothing.
  app.get('/checkout/card-frame', { schema: { hide: true, querystring: Type.Object({ s: Type.Optional(Type.String({ maxLength: 100 })) }) } }, async (request, reply) =>
    sendCardFrame(reply, await checkout.frameAncestors(UUID_RE.test(request.query.s ?? '') ? request.query.s : undefined)));
  app.get('/checkout/card-frame.js', { schema: { hide: true } }, script('card-frame'));
  app.get('/checkout/card-frame.css', { schema: { hide: true } }, css(CARD_FRAME_CSS));
  // The 3-D Secure return page, in the widget's modal frame, tells the widget the challenge is over (and nothing else).
  app.get('/checkout/3ds-done.js', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/javascript; charset=utf-8').header('cache-control', CACHED)
      .send(`(function () {
  var next = document.currentScript && document.currentScript.getAttribute('data-next');
  if (window.parent !== window) window.parent.postMessage({ type: ${JSON.stringify(THREE_DS_DONE)} }, '*');
  else if (next && /^https?:/.test(next)) window.location.replace(next);
})();
`));

  app.get('/checkout/checkout.css', { schema: { hide: true } }, css(CHECKOUT_CSS));
  app.get('/checkout/widget.css', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', CACHED)
      .header('access-control-allow-origin', '*').header('cross-origin-resource-policy', 'cross-origin').send(WIDGET_CSS));
}
