// Which language a shopper's page or message is in, from a request: the one decision
// (pickLocale, i18n.ts) fed with the shopper's explicit choice, the merchant's
// customer.locale and Accept-Language; and the cookie that keeps the shopper's choice.
// The page around it (the language switch, the heading) is shopper-page.tsx.
//
// The explicit choice: `?lang=fr` on any shopper page (the switch's links) or on the
// widget's session read; a page opened with it keeps it in the `payd_lang` cookie
// (a year, every path of payd, SameSite=Lax), read by every later page and by the
// widget's requests from payd's own pages (same origin). A `lang` payd does not speak
// is ignored.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Locale, localeOf, pickLocale } from './i18n.ts';
import { readCookie, setPlainCookie } from './cookies.ts';

export const LANG_PARAM = 'lang';
export const LANG_COOKIE = 'payd_lang';
const COOKIE_MAX_AGE = 365 * 24 * 3600;

/** What a request says about the language: the shopper's explicit choice, and the browser's. */
export interface LanguageChoice {
  explicit?: Locale;
  acceptLanguage?: string;
}

const queryLang = (request: FastifyRequest) => {
  const q = request.url.indexOf('?');
  return q < 0 ? undefined : localeOf(new URLSearchParams(request.url.slice(q + 1)).get(LANG_PARAM));
};

const cookieLang = (request: FastifyRequest): Locale | undefined => localeOf(readCookie(request, LANG_COOKIE));

export function languageChoice(request: FastifyRequest): LanguageChoice {
  const explicit = queryLang(request) ?? cookieLang(request);
  const acceptLanguage = request.headers['accept-language'];
  return { ...(explicit ? { explicit } : {}), ...(typeof acceptLanguage === 'string' ? { acceptLanguage } : {}) };
}

/** The language of a shopper page or answer: explicit choice, else the merchant's customer.locale, else the browser's, else English. */
export function shopperLocale(choice: LanguageChoice, merchantLocale?: unknown): Locale {
  return pickLocale(choice.acceptLanguage, merchantLocale, choice.explicit);
}

/** `?lang=xx` when the request carries a language payd speaks, for a form that should keep it; else ''. */
export function langQuery(request: FastifyRequest): string {
  const lang = queryLang(request);
  return lang ? `?${LANG_PARAM}=${lang}` : '';
}

/** The language of a page, and what its language switch needs (the address it links to with ?lang=). */
export interface PageLanguage {
  locale: Locale;
  /** The page's address (path and query), which the switch links to with ?lang=. */
  url: string;
}

/**
 * The language of a shopper page for this request: decides it, keeps an explicit
 * `?lang=` in the cookie, and says it in Content-Language.
 */
export function pageLanguage(request: FastifyRequest, reply: FastifyReply, merchantLocale?: unknown): PageLanguage {
  const fromQuery = queryLang(request);
  if (fromQuery && cookieLang(request) !== fromQuery) {
    setPlainCookie(reply, LANG_COOKIE, fromQuery, { path: '/', secure: request.protocol === 'https' }, COOKIE_MAX_AGE);
  }
  const locale = shopperLocale(languageChoice(request), merchantLocale);
  reply.header('content-language', locale);
  return { locale, url: request.url };
}
