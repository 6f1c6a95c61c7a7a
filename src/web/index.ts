// src/web: payd's one web layer for every server-rendered page (checkout, payment links,
// the simulated ACS, dashboard, identity pages, console), and the shopper's language. docs/architecture.md "Web layer",
// docs/decisions.md "One web layer".
//
// How to write a page
//   Pages are Preact components in .tsx files, rendered to a string on the server. Text
//   and attribute values are escaped by the renderer: write {value}, never build HTML by
//   hand. <TrustedHtml html={...}/> is the one door for HTML built elsewhere by payd;
//   <Text value={...}/> is text with every markup character an entity (a receipt's items).
//
//     import { Document, csp, sendHtml } from '../web/index.ts';
//     app.get('/thing', async (request, reply) => sendHtml(reply, 200,
//       <Document title="A thing" stylesheets={['/dashboard/assets/dashboard.css']}>
//         <main><h1>A thing</h1><p>{request.query.name}</p></main>
//       </Document>, { csp: csp() }));
//
//   csp() is nothing but 'self' and frame-ancestors 'none'; pass what the page needs
//   ({ frameSrc: "'self'", connect: true, frameAncestors: '*' }). sendHtml adds no-store,
//   no-referrer, nosniff and (unless frameable) X-Frame-Options DENY.
//
// A form with CSRF
//   The token is bound to the session cookie's raw value under the area's key:
//     const token = csrfToken(key, session.raw);
//     <form method="post" action="..."><CsrfField token={token} />...</form>
//   and in the POST route, before acting:
//     if (!csrfValid(request, key, session.raw)) return ...403 page...;
//
// A shopper page (checkout, payment links, a partner's 3-D Secure page)
//   In the shopper's language (the ?lang= choice kept in the payd_lang cookie, else the
//   merchant's customer.locale, else the browser's) with the language switch:
//     const lang = pageLanguage(request, reply, customerLocale);
//     sendShopperMessage(reply, lang, 200, t(lang.locale, 'accepted'), <p role="status">...</p>);
//   or <ShopperPage lang={lang} title=...> and sendShopperPage(reply, status, page,
//   { frameAncestors, frameSrc }). Words are in i18n.ts (locales/, one file a language;
//   the widget's bundle imports i18n.ts itself, never this index); tParts fills a
//   message's placeholders with elements.
//
// A signed cookie, a session
//   @fastify/cookie is registered once on the root (app.ts, webCookies) with payd's cookie
//   key. setSignedCookie(reply, name, value, { path, secure }) / readSignedCookie(request,
//   name) for any signed value; startSession / readSession / endSession for a signed-in
//   user (`<subject>.<expiry>.<sid>`, signed; the area checks the sid is still alive).
export { type EncodedPage, Text, TrustedHtml, render, renderPage, sendHtml, type PageHeaders } from './html.tsx';
export { Document, type DocumentProps } from './layout.tsx';
export { csp, cspHash, type CspOptions } from './csp.ts';
export { webCookies, setSignedCookie, readSignedCookie, readCookie, setPlainCookie, clearCookie, type CookieScope } from './cookies.ts';
export { startSession, readSession, endSession, type SessionCookie, type WebSession } from './session.ts';
export { CSRF_FIELD, CsrfField, csrfToken, csrfValid } from './csrf.tsx';
export { type Locale, type MessageKey, LOCALES, hasMessage, intlLocale, languages, localeOf, methodLabel, pickLocale, t } from './i18n.ts';
export { LANG_COOKIE, LANG_PARAM, type LanguageChoice, type PageLanguage, langQuery, languageChoice, pageLanguage, shopperLocale } from './language.ts';
export { LanguageSwitch, SHOPPER_CSS, ShopperPage, type ShopperFraming, type ShopperPageProps, sendShopperMessage, sendShopperPage, tParts } from './shopper-page.tsx';
