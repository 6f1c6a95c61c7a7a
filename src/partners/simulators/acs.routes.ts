// The simulated acquirer's ACS (3-D Secure access control server): the page the shopper
// is sent to when card-sim asks for a challenge, where they approve or fail it. It lives
// with the simulator and is registered by it (PartnerConnector.registerRoutes); payd's
// checkout knows nothing of it beyond the redirection URL the partner returned.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { Uuid } from '../../platform/http/schemas.ts';
import { escapeHtml } from '../../checkout/pages.ts';
import { formatAmount } from '../../checkout/widget/validation.ts';
import { intlLocale, t } from '../../checkout/i18n.ts';
import { type PageLanguage, langQuery, pageLanguage, shopperPage, tHtml } from '../../checkout/language.ts';
import type { SimulatedPartner } from './simulated-partner.ts';

// An ACS page is shown in a frame of the merchant's page (the widget's 3-D Secure modal),
// as the 3-D Secure browser flow does; so is the page that leads back to payd.
const FRAMABLE = { framing: { frameAncestors: '*' } } as const;

// The pages speak the cardholder's language as payd's own do (src/checkout/language.ts):
// the shopper's choice on payd's pages, else the payment's customer.locale (which the
// simulated issuer keeps with the challenge), else the browser's.
export async function acsRoutes(root: FastifyInstance, sim: SimulatedPartner): Promise<void> {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const RefParams = Type.Object({ ref: Uuid() });
  const nothing = (request: FastifyRequest, reply: FastifyReply) => {
    const lang = pageLanguage(request, reply);
    return shopperPage(reply, lang, 404, t(lang.locale, 'acsNothingTitle'), `<p>${tHtml(lang.locale, 'acsNothingText')}</p>`);
  };
  const onward = (lang: PageLanguage, url: string | undefined) => (url ? `<p><a href="${escapeHtml(url)}" id="acs-continue">${tHtml(lang.locale, 'continue')}</a></p>` : '');
  app.get('/sim/acs/:ref', { schema: { hide: true, params: RefParams } }, async (request, reply) => {
    const c = await sim.challenge(request.params.ref);
    if (!c) return nothing(request, reply);
    const lang = pageLanguage(request, reply, c.locale);
    const L = lang.locale;
    if (c.status === 'EXPIRED') return expiredPage(reply, lang, c.return_url);
    if (c.status !== 'CHALLENGE_REQUIRED') {
      // Back (or a reload) after the challenge: it is over; the way onward is the return.
      return shopperPage(reply, lang, 200, t(L, 'acsDoneTitle'), `<p role="status">${tHtml(L, 'acsDoneText')}</p>${onward(lang, c.return_url)}`, FRAMABLE);
    }
    const action = `/sim/acs/${request.params.ref}${langQuery(request)}`;
    return shopperPage(reply, lang, 200, t(L, 'acsTitle'), `
<div class="card-box">
<p>${tHtml(L, 'acsAsk', { amount: `<strong>${escapeHtml(formatAmount(c.amount, c.currency, intlLocale(L)))}</strong>` })}</p>
<p class="muted">${tHtml(L, 'acsNote')}</p>
<form method="post" action="${escapeHtml(action)}"><input type="hidden" name="result" value="pass"><button type="submit" id="acs-approve">${tHtml(L, 'acsApprove')}</button></form>
<form method="post" action="${escapeHtml(action)}"><input type="hidden" name="result" value="fail"><button type="submit" class="secondary" id="acs-fail">${tHtml(L, 'acsFail')}</button></form>
</div>`, FRAMABLE);
  });
  app.post('/sim/acs/:ref', {
    schema: { hide: true, params: RefParams, body: Type.Object({ result: Type.Union([Type.Literal('pass'), Type.Literal('fail')]) }) },
  }, async (request, reply) => {
    const c = await sim.challenge(request.params.ref);
    if (!c) return nothing(request, reply);
    const lang = pageLanguage(request, reply, c.locale);
    const L = lang.locale;
    const done = await sim.completeChallenge(request.params.ref, request.body.result === 'pass');
    if (done?.partner_status === 'EXPIRED') return expiredPage(reply, lang, c.return_url);
    // A new navigation rather than a redirect of the form post: the way back ends on the
    // merchant's origin, which the page's CSP form-action 'self' would block.
    if (c.return_url) {
      return shopperPage(reply, lang, 200, t(L, 'authFinished'),
        `<p role="status">${tHtml(L, 'returning')} <a href="${escapeHtml(c.return_url)}">${tHtml(L, 'continue')}</a></p>`, { ...FRAMABLE, refreshTo: c.return_url });
    }
    return shopperPage(reply, lang, 200, t(L, 'authFinished'), `<p role="status">${tHtml(L, 'mayClose')}</p>`);
  });
}

/**
 * The challenge was cancelled: payd stopped waiting for the shopper (PAYD_CHALLENGE_EXPIRY_SECONDS)
 * and the payment failed. Nothing is completed here; the way onward is the return, where
 * the payment's outcome is told.
 */
function expiredPage(reply: FastifyReply, lang: PageLanguage, returnUrl: string | undefined) {
  const L = lang.locale;
  return shopperPage(reply, lang, 200, t(L, 'acsExpiredTitle'),
    `<p role="status">${tHtml(L, 'acsExpiredText')}</p>${returnUrl ? `<p><a href="${escapeHtml(returnUrl)}" id="acs-continue">${tHtml(L, 'continue')}</a></p>` : ''}`, FRAMABLE);
}
