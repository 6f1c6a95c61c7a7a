// The hosted page (links.hosted_page) and the outcome page the shopper comes back to
// (/checkout/return/:id, then the merchant's return address with service-redirection-data).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Uuid } from '../platform/http/schemas.ts';
import { LANG_PARAM, pageLanguage } from '../web/index.ts';
import type { CheckoutService } from './checkout.service.ts';
import { sendHostedPage, sendNotHere, sendOutcomePage } from './checkout-pages.tsx';

/** The outcome pages need the MAC of their address (return-links.ts): an id alone opens nothing. */
export const ReturnQuery = Type.Object({ t: Type.Optional(Type.String({ maxLength: 100 })) });

/** An outcome address that opens nothing, in the browser's language or the shopper's choice. */
export const notHere = (request: FastifyRequest, reply: FastifyReply, key: 'paymentNotFoundText' | 'paymentMissingText' = 'paymentNotFoundText') =>
  sendNotHere(reply, pageLanguage(request, reply), key);

export async function hostedPageRoutes(root: FastifyInstance, { checkout }: { checkout: CheckoutService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  // /checkout/pay#session={widget.data}. The credential is in the fragment, which browsers
  // never send (no request line, log, proxy or Referer sees it); the page's script reads it
  // and sends it in x-payd-session. Addresses of the old form (?session=, handed out
  // before) are moved to the fragment by a redirect (the logged URL has the value redacted).
  app.get('/checkout/pay', {
    schema: { hide: true, querystring: Type.Object({ session: Type.Optional(Type.String({ maxLength: 300 })), [LANG_PARAM]: Type.Optional(Type.String({ maxLength: 35 })) }) },
  }, async (request, reply) => {
    if (request.query.session !== undefined) {
      const lang = request.query[LANG_PARAM] ? `?${LANG_PARAM}=${encodeURIComponent(request.query[LANG_PARAM])}` : '';
      return reply.code(303).header('cache-control', 'no-store').header('referrer-policy', 'no-referrer')
        .redirect(`/checkout/pay${lang}#session=${encodeURIComponent(request.query.session)}`, 303);
    }
    // The session is unknown here (its credential is in the fragment): the shopper's choice
    // or the browser's language; the widget says the heading again in the session's.
    return sendHostedPage(reply, pageLanguage(request, reply));
  });

  app.get('/checkout/return/:id', { schema: { hide: true, params: Type.Object({ id: Uuid() }), querystring: ReturnQuery } }, async (request, reply) => {
    reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
    if (!checkout.returnOk('return', request.params.id, request.query.t)) return notHere(request, reply);
    const done = await checkout.finish(request.params.id).catch(() => undefined);
    if (!done) return notHere(request, reply, 'paymentMissingText');
    if (done.url) return reply.code(303).header('cache-control', 'no-store').redirect(done.url, 303);
    const lang = pageLanguage(request, reply, done.session.customer?.locale);
    if (done.authorizationStatus === 'AUTHORIZED') return sendOutcomePage(reply, lang, { kind: 'accepted', receipt: await checkout.receipt(done.session) });
    if (done.authorizationStatus === 'PENDING') return sendOutcomePage(reply, lang, { kind: 'pending' });
    return sendOutcomePage(reply, lang, { kind: 'notCompleted', attempted: !!done.authorizationStatus, retryUrl: await checkout.retryUrl(done.session) });
  });
}
