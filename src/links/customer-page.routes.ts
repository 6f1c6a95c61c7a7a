// The payment link's customer page (links.customer_url): the same widget, on a session
// of the link; clear pages for links that are paid, cancelled or expired (customer-page.tsx).
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { Uuid } from '../platform/http/schemas.ts';
import { formatAmount } from '../money/currency.ts';
import { intlLocale, pageLanguage, t } from '../web/index.ts';
import type { ClientSessionsService } from '../payments/client-sessions.service.ts';
import type { PaymentLinksService } from './links.service.ts';
import { sendLinkCheckout, sendLinkNotFound, sendLinkStatus } from './customer-page.tsx';

export async function customerPageRoutes(app: FastifyInstance, deps: { links: PaymentLinksService; sessions: ClientSessionsService; merchantName: (entityId: string) => Promise<string> }) {
  app.get<{ Params: { id: string } }>('/pay/:id', { schema: { hide: true, params: Type.Object({ id: Uuid() }) } }, async (request, reply) => {
    const page = await deps.links.sessionForPage(request.params.id).catch(() => undefined);
    if (!page) return sendLinkNotFound(reply, pageLanguage(request, reply));
    // Every page of the link is in the language of its customer (the merchant's customer.locale), unless the shopper chose.
    const lang = pageLanguage(request, reply, page.link.customer?.locale);
    const L = lang.locale;
    const amount = formatAmount(page.link.amount, page.link.currency, intlLocale(L));
    const merchant = await deps.merchantName(page.link.entity_id);
    const reference = typeof page.link.order?.reference === 'string' ? page.link.order.reference : undefined;
    const status = (code: number, title: string, text: string) => sendLinkStatus(reply, lang, code, title, text);
    switch (page.status) {
      case 'PAID':
        return status(200, t(L, 'linkPaidTitle'), merchant ? t(L, 'linkPaidText', { amount, merchant }) : t(L, 'linkPaidTextAnonymous', { amount }));
      case 'CANCELLED':
        return status(410, t(L, 'linkCancelledTitle'), t(L, 'linkCancelledText'));
      case 'EXPIRED':
        return status(410, t(L, 'linkExpiredTitle'), t(L, 'linkExpiredText'));
      default:
        if (page.busy) return status(409, t(L, 'linkBusyTitle'), t(L, 'linkBusyText'));
        // Who asks for the money, for what: a page without it looks like phishing.
        return sendLinkCheckout(reply, lang, {
          title: merchant ? t(L, 'payMerchant', { name: merchant }) : t(L, 'payYourOrder'),
          intro: `${reference ? `${t(L, 'orderDot', { reference })} ` : ''}${t(L, 'amountDue', { amount })}`,
          widgetData: deps.sessions.widgetData(page.session!.id),
        });
    }
  });
}
