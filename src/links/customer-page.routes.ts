// The payment link's customer page (links.customer_url): the same widget, on a session
// of the link; clear pages for links that are paid, cancelled or expired.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { Uuid } from '../platform/http/schemas.ts';
import { checkoutPage, escapeHtml } from '../checkout/pages.ts';
import { formatAmount } from '../checkout/widget/validation.ts';
import { intlLocale, t } from '../checkout/i18n.ts';
import { pageLanguage, shopperPage, tHtml } from '../checkout/language.ts';
import type { ClientSessionsService } from '../payments/client-sessions.service.ts';
import type { PaymentLinksService } from './links.service.ts';

export async function customerPageRoutes(app: FastifyInstance, deps: { links: PaymentLinksService; sessions: ClientSessionsService; merchantName: (entityId: string) => Promise<string> }) {
  app.get<{ Params: { id: string } }>('/pay/:id', { schema: { hide: true, params: Type.Object({ id: Uuid() }) } }, async (request, reply) => {
    const page = await deps.links.sessionForPage(request.params.id).catch(() => undefined);
    if (!page) {
      const lang = pageLanguage(request, reply);
      return shopperPage(reply, lang, 404, t(lang.locale, 'linkNotFoundTitle'), `<p>${tHtml(lang.locale, 'linkNotFoundText')}</p>`);
    }
    // Every page of the link is in the language of its customer (the merchant's customer.locale), unless the shopper chose.
    const lang = pageLanguage(request, reply, page.link.customer?.locale);
    const L = lang.locale;
    const amount = formatAmount(page.link.amount, page.link.currency, intlLocale(L));
    const merchant = await deps.merchantName(page.link.entity_id);
    const reference = typeof page.link.order?.reference === 'string' ? page.link.order.reference : undefined;
    const status = (code: number, title: string, html: string) => shopperPage(reply, lang, code, title, `<p role="status">${html}</p>`);
    switch (page.status) {
      case 'PAID':
        return status(200, t(L, 'linkPaidTitle'), merchant
          ? tHtml(L, 'linkPaidText', { amount: escapeHtml(amount), merchant: escapeHtml(merchant) })
          : tHtml(L, 'linkPaidTextAnonymous', { amount: escapeHtml(amount) }));
      case 'CANCELLED':
        return status(410, t(L, 'linkCancelledTitle'), tHtml(L, 'linkCancelledText'));
      case 'EXPIRED':
        return status(410, t(L, 'linkExpiredTitle'), tHtml(L, 'linkExpiredText'));
      default:
        if (page.busy) return status(409, t(L, 'linkBusyTitle'), tHtml(L, 'linkBusyText'));
        // Who asks for the money, for what: a page without it looks like phishing.
        return checkoutPage(reply, merchant ? t(L, 'payMerchant', { name: merchant }) : t(L, 'payYourOrder'),
          `${reference ? `${t(L, 'orderDot', { reference })} ` : ''}${t(L, 'amountDue', { amount })}`, deps.sessions.widgetData(page.session!.id), lang);
    }
  });
}
