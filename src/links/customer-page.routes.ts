// The payment link's customer page (links.customer_url): the same widget, on a session
// of the link; clear pages for links that are paid, cancelled or expired.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { Uuid } from '../platform/http/schemas.ts';
import { checkoutPage, escapeHtml, sendPage } from '../checkout/pages.ts';
import { formatAmount } from '../checkout/widget/validation.ts';
import { intlLocale, pickLocale, t } from '../checkout/i18n.ts';
import type { ClientSessionsService } from '../payments/client-sessions.service.ts';
import type { PaymentLinksService } from './links.service.ts';

export async function customerPageRoutes(app: FastifyInstance, deps: { links: PaymentLinksService; sessions: ClientSessionsService; merchantName: (entityId: string) => Promise<string> }) {
  app.get<{ Params: { id: string } }>('/pay/:id', { schema: { hide: true, params: Type.Object({ id: Uuid() }) } }, async (request, reply) => {
    const page = await deps.links.sessionForPage(request.params.id).catch(() => undefined);
    if (!page) return sendPage(reply, 404, 'Payment link not found', '<p>This payment link does not exist. Check the address you were given.</p>');
    const amount = formatAmount(page.link.amount, page.link.currency);
    const merchant = await deps.merchantName(page.link.entity_id);
    const reference = typeof page.link.order?.reference === 'string' ? page.link.order.reference : undefined;
    switch (page.status) {
      case 'PAID':
        return sendPage(reply, 200, 'Already paid', `<p role="status">This payment link of ${escapeHtml(amount)}${merchant ? ` to ${escapeHtml(merchant)}` : ''} has been paid. Nothing more is due.</p>`);
      case 'CANCELLED':
        return sendPage(reply, 410, 'Payment link cancelled', '<p role="status">The merchant cancelled this payment link. It accepts no payment; contact the merchant if you still need to pay.</p>');
      case 'EXPIRED':
        return sendPage(reply, 410, 'Payment link expired', '<p role="status">This payment link has expired and accepts no payment. Ask the merchant for a new one.</p>');
      default:
        if (page.busy) {
          return sendPage(reply, 409, 'Payment in progress', '<p role="status">A payment of this link is being completed. Try again in a few minutes.</p>');
        }
        // Who asks for the money, for what: a page without it looks like phishing.
        {
          const L = pickLocale(request.headers['accept-language'], typeof page.link.customer?.locale === 'string' ? page.link.customer.locale : undefined);
          const due = formatAmount(page.link.amount, page.link.currency, intlLocale(L));
          return checkoutPage(reply, merchant ? t(L, 'payMerchant', { name: merchant }) : t(L, 'payYourOrder'),
            `${reference ? `${t(L, 'orderDot', { reference })} ` : ''}${t(L, 'amountDue', { amount: due })}`, deps.sessions.widgetData(page.session!.id), L);
        }
    }
  });
}
