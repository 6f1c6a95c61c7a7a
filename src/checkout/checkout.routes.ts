// Shopper-facing HTTP, one plugin of a few route groups: the browser API the widget calls
// (session-api.routes.ts; session credential in x-payd-session, CORS open because no cookie
// is involved), the widget's and card frame's files (assets.routes.ts), the hosted page and
// the outcome page (hosted-page.routes.ts), and the return from 3-D Secure
// (three-ds-return.routes.ts). The pages are checkout-pages.tsx, on src/web.
import type { FastifyInstance } from 'fastify';
import type { CheckoutService } from './checkout.service.ts';
import { sessionApiRoutes } from './session-api.routes.ts';
import { assetRoutes } from './assets.routes.ts';
import { hostedPageRoutes } from './hosted-page.routes.ts';
import { threeDsReturnRoutes } from './three-ds-return.routes.ts';

interface Deps {
  checkout: CheckoutService;
}

export async function checkoutRoutes(app: FastifyInstance, deps: Deps) {
  app.addHook('onSend', async (request, reply) => {
    // Every answer of the browser API (a session read, a submit's outcome, a problem) is the
    // session as it is now: never kept by a cache (the session read already said so).
    if (request.url.startsWith('/checkout/v1/') && request.method !== 'OPTIONS') reply.header('cache-control', 'no-store');
    if (request.url.startsWith('/checkout/v1/') || request.url.startsWith('/checkout/widget.js')) {
      reply.header('access-control-allow-origin', '*');
      const vary = reply.getHeader('vary'); // widget.js varies by Accept-Encoding too
      reply.header('vary', vary ? `${String(vary)}, origin` : 'origin');
    }
  });
  // The groups share this plugin's scope (its hooks: CORS above, the shopper's language of problems in session-api.routes.ts).
  await sessionApiRoutes(app, deps);
  await assetRoutes(app, deps);
  await hostedPageRoutes(app, deps);
  await threeDsReturnRoutes(app, deps);
}
