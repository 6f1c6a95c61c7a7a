// Which language a shopper's page or message is in, from a request: the one decision
// (pickLocale, src/checkout/i18n.ts) fed with the shopper's explicit choice, the
// merchant's customer.locale and Accept-Language; the language switch of payd's pages;
// and the cookie that keeps the shopper's choice.
//
// The explicit choice: `?lang=fr` on any shopper page (the switch's links) or on the
// widget's session read; a page opened with it keeps it in the `payd_lang` cookie
// (a year, every path of payd, SameSite=Lax), read by every later page and by the
// widget's requests from payd's own pages (same origin). A `lang` payd does not speak
// is ignored.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Locale, type MessageKey, languages, localeOf, pickLocale, t } from './i18n.ts';
import { type PageFraming, escapeHtml, sendPage } from './pages.ts';

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

function cookieLang(request: FastifyRequest): Locale | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const [name, value] = part.trim().split('=');
    if (name === LANG_COOKIE) return localeOf(value);
  }
  return undefined;
}

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

/** The language of a page, and what the page needs to say it (the switch). */
export interface PageLanguage {
  locale: Locale;
  /** The language switch's HTML (links to the same address with ?lang=). */
  switchHtml: string;
}

/**
 * The language of a shopper page for this request: decides it, keeps an explicit
 * `?lang=` in the cookie, says it in Content-Language, and builds the page's switch.
 */
export function pageLanguage(request: FastifyRequest, reply: FastifyReply, merchantLocale?: unknown): PageLanguage {
  const fromQuery = queryLang(request);
  if (fromQuery && cookieLang(request) !== fromQuery) {
    const secure = request.protocol === 'https' ? '; Secure' : '';
    reply.header('set-cookie', `${LANG_COOKIE}=${fromQuery}; Path=/; Max-Age=${COOKIE_MAX_AGE}; SameSite=Lax; HttpOnly${secure}`);
  }
  const locale = shopperLocale(languageChoice(request), merchantLocale);
  reply.header('content-language', locale);
  return { locale, switchHtml: languageSwitch(request.url, locale) };
}

/**
 * The switch: a labelled list of links, one per language (named in itself, marked with
 * its lang), to this very address with ?lang= (its other parameters kept).
 */
export function languageSwitch(url: string, current: Locale): string {
  const here = new URL(url, 'http://payd.invalid');
  const links = languages().map(({ tag, name }) => {
    here.searchParams.set(LANG_PARAM, tag);
    const href = `${here.pathname}${here.search}`;
    return `<li><a href="${escapeHtml(href)}" hreflang="${tag}" lang="${tag}"${tag === current ? ' aria-current="true"' : ''}>${escapeHtml(name)}</a></li>`;
  });
  return `<nav class="payd-lang" aria-label="${escapeHtml(t(current, 'language'))}" data-payd-t-label="language"><ul>${links.join('')}</ul></nav>`;
}

/** A message as HTML: its text escaped, its placeholders filled with HTML given by the caller (escaped there). */
export function tHtml(locale: Locale, key: MessageKey, html: Record<string, string> = {}): string {
  const marks = Object.fromEntries(Object.keys(html).map((name, i) => [name, `\u0000${i}\u0000`]));
  let out = escapeHtml(t(locale, key, marks));
  Object.values(html).forEach((value, i) => { out = out.replace(`\u0000${i}\u0000`, value); });
  return out;
}

/** A shopper page in its language, with the language switch. */
export function shopperPage(reply: FastifyReply, lang: PageLanguage, status: number, title: string, body: string,
  more: { scripts?: string[]; refreshTo?: string; framing?: PageFraming } = {}): FastifyReply {
  return sendPage(reply, status, title, body, more.scripts ?? [], more.refreshTo, [], lang.locale, { ...more.framing, languageSwitch: lang.switchHtml });
}
