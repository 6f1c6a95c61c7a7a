// The simulated ACS's pages on the web layer (src/web), in the cardholder's language as
// payd's own pages are: the challenge (approve or fail), the challenge already over or
// cancelled, the way back to payd. An ACS page is shown in a frame of the merchant's page
// (the widget's 3-D Secure modal), as the 3-D Secure browser flow does; so is the page
// that leads back to payd.
import type { FastifyReply } from 'fastify';
import type { ComponentChildren } from 'preact';
import { type PageLanguage, ShopperPage, intlLocale, sendShopperMessage, sendShopperPage, t, tParts } from '../../web/index.ts';
import { formatAmount } from '../../money/currency.ts';

const FRAMABLE = { frameAncestors: '*' };

const Onward = ({ lang, url }: { lang: PageLanguage; url: string | undefined }) =>
  (url ? <p><a href={url} id="acs-continue">{t(lang.locale, 'continue')}</a></p> : null);

/** No challenge at this address. */
export const sendNothing = (reply: FastifyReply, lang: PageLanguage): FastifyReply =>
  sendShopperMessage(reply, lang, 404, t(lang.locale, 'acsNothingTitle'), <p>{t(lang.locale, 'acsNothingText')}</p>);

/** The challenge: the amount, and the two answers, posted to `action`. */
export function sendChallenge(reply: FastifyReply, lang: PageLanguage, c: { amount: number; currency: string }, action: string): FastifyReply {
  const L = lang.locale;
  const answer = (result: 'pass' | 'fail', button: ComponentChildren) => (
    <form method="post" action={action}><input type="hidden" name="result" value={result} />{button}</form>
  );
  return sendShopperMessage(reply, lang, 200, t(L, 'acsTitle'), (
    <div class="card-box">
      <p>{tParts(L, 'acsAsk', { amount: <strong>{formatAmount(c.amount, c.currency, intlLocale(L))}</strong> })}</p>
      <p class="muted">{t(L, 'acsNote')}</p>
      {answer('pass', <button type="submit" id="acs-approve">{t(L, 'acsApprove')}</button>)}
      {answer('fail', <button type="submit" class="secondary" id="acs-fail">{t(L, 'acsFail')}</button>)}
    </div>
  ), FRAMABLE);
}

/** Back (or a reload) after the challenge: it is over; the way onward is the return. */
export const sendDone = (reply: FastifyReply, lang: PageLanguage, returnUrl: string | undefined): FastifyReply =>
  sendShopperMessage(reply, lang, 200, t(lang.locale, 'acsDoneTitle'), <><p role="status">{t(lang.locale, 'acsDoneText')}</p><Onward lang={lang} url={returnUrl} /></>, FRAMABLE);

/**
 * The challenge was cancelled: payd stopped waiting for the shopper (PAYD_CHALLENGE_EXPIRY_SECONDS)
 * and the payment failed. Nothing is completed here; the way onward is the return, where
 * the payment's outcome is told.
 */
export const sendExpired = (reply: FastifyReply, lang: PageLanguage, returnUrl: string | undefined): FastifyReply =>
  sendShopperMessage(reply, lang, 200, t(lang.locale, 'acsExpiredTitle'), <><p role="status">{t(lang.locale, 'acsExpiredText')}</p><Onward lang={lang} url={returnUrl} /></>, FRAMABLE);

/**
 * The challenge answered. A new navigation rather than a redirect of the form post: the
 * way back ends on the merchant's origin, which the page's CSP form-action 'self' would
 * block. Without a return address, the shopper may close the page.
 */
export function sendAnswered(reply: FastifyReply, lang: PageLanguage, returnUrl: string | undefined): FastifyReply {
  const L = lang.locale;
  if (!returnUrl) return sendShopperMessage(reply, lang, 200, t(L, 'authFinished'), <p role="status">{t(L, 'mayClose')}</p>);
  return sendShopperPage(reply, 200, (
    <ShopperPage lang={lang} title={t(L, 'authFinished')} refreshTo={returnUrl}>
      <p role="status">{t(L, 'returning')} <a href={returnUrl}>{t(L, 'continue')}</a></p>
    </ShopperPage>
  ), FRAMABLE);
}
