// The return from a 3-D Secure challenge (/checkout/3ds-return/:paymentId, the address the
// partner's ACS sends the shopper back to): in the widget's frame, a page telling the
// widget the challenge is over; otherwise onward to the session's page or return address.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Uuid } from '../platform/http/schemas.ts';
import { pageLanguage } from '../web/index.ts';
import type { CheckoutService } from './checkout.service.ts';
import { sendThreeDsDone, sendThreeDsFinished } from './checkout-pages.tsx';
import { ReturnQuery, notHere } from './hosted-page.routes.ts';

export async function threeDsReturnRoutes(root: FastifyInstance, { checkout }: { checkout: CheckoutService }) {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/checkout/3ds-return/:paymentId', { schema: { hide: true, params: Type.Object({ paymentId: Uuid() }), querystring: ReturnQuery } }, async (request, reply) => {
    reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
    if (!checkout.returnOk('3ds', request.params.paymentId, request.query.t)) return notHere(request, reply);
    const done = await checkout.afterChallenge(request.params.paymentId);
    // The widget's 3-D Secure modal: the page in the frame tells the widget the challenge is
    // over (3ds-done.js; the widget then asks payd the outcome and stays on the merchant's
    // page). Browsers say where a page goes (Sec-Fetch-Dest: iframe or document); where
    // they do not (older browsers, or plain http to a host that is not localhost), an
    // embedded session's page decides in the browser: in a frame it tells the widget, at
    // the top it goes on to the return address (also a link, for a browser without script).
    const dest = request.headers['sec-fetch-dest'];
    if (done.sessionId && (dest === 'iframe' || (dest === undefined && await checkout.isEmbedded(done.sessionId)))) {
      const framing = await checkout.framing(done.sessionId);
      const lang = pageLanguage(request, reply, framing.customerLocale);
      return sendThreeDsDone(reply, lang, checkout.returnUrl(done.sessionId), framing.frameAncestors);
    }
    if (done.retryUrl) return reply.code(303).redirect(done.retryUrl, 303);
    if (done.sessionId) return reply.redirect(checkout.returnUrl(done.sessionId), 303);
    const key = done.authorizationStatus === 'AUTHORIZED' ? 'cardConfirmed' : done.authorizationStatus === undefined ? 'noPaymentHere' : 'cardNotConfirmed';
    return sendThreeDsFinished(reply, pageLanguage(request, reply), key);
  });
}
