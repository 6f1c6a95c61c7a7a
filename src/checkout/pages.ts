// Server-rendered pages of the checkout (hosted page, payment-link page, 3-D Secure
// page, outcomes): one layout, escaped text, one stylesheet, and a strict CSP (no
// inline script or style; scripts and styles only from payd itself).
import type { FastifyReply } from 'fastify';

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The look of the fields, shared by the widget and the card frame; the merchant's style options set the variables. */
const FIELDS_CSS = `
.payd-form { font-family: var(--payd-font-family, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif); font-size: var(--payd-font-size, 1rem); color: var(--payd-color, #1b1f24); }
.payd-form .payd-field { margin: 0 0 .9rem; display: flex; flex-direction: column; }
.payd-form .payd-field label, .payd-form legend { font-weight: 600; margin-bottom: .3rem; color: var(--payd-label-color, inherit); }
.payd-form .payd-field input { font: inherit; color: var(--payd-color, #1b1f24); background: var(--payd-background, #fff); padding: .65rem .7rem; border: 1px solid var(--payd-border-color, #8a94a3); border-radius: var(--payd-border-radius, 8px); }
.payd-form input:focus-visible, .payd-form button:focus-visible, .payd-form a:focus-visible { outline: 3px solid var(--payd-focus-color, #1a5fd6); outline-offset: 2px; }
.payd-form input[aria-invalid="true"] { border-color: var(--payd-error-color, #b3261e); }
.payd-form .payd-error { color: var(--payd-error-color, #b3261e); margin: .25rem 0 0; min-height: 1em; font-size: .9rem; }
.payd-form .payd-row { display: grid; grid-template-columns: 1fr 1fr; gap: 0 .75rem; align-items: end; }
.payd-form .payd-row .payd-field { min-width: 0; }
.payd-form .payd-brand, .payd-form .payd-hint { margin: .25rem 0 0; font-size: .9rem; color: #4a5361; min-height: 1em; }
.payd-form [hidden] { display: none !important; }
`;

/** The widget's own look, scoped to its elements (merchant pages load it from payd). */
export const WIDGET_CSS = `${FIELDS_CSS}
.payd-form { max-width: 28rem; }
.payd-form fieldset { border: 0; padding: 0; margin: 0 0 1rem; }
.payd-form .payd-choice { display: flex; gap: .5rem; align-items: center; margin: .35rem 0; }
.payd-form .payd-amount { font-size: 1.1rem; font-weight: 600; }
.payd-form .payd-merchant { font-weight: 600; margin: 0 0 .2rem; }
.payd-form .payd-order { color: #4a5361; margin: 0 0 .4rem; }
.payd-form .payd-items { margin: 0 0 .6rem; padding-left: 1.2rem; color: #4a5361; }
.payd-form .payd-frame { display: block; width: 100%; height: 17rem; border: 0; margin: 0 0 .3rem; color-scheme: normal; }
.payd-form .payd-pay { font-size: 1.05rem; padding: .8rem 1rem; width: 100%; border: 0; border-radius: var(--payd-border-radius, 8px); background: var(--payd-focus-color, #1a5fd6); color: #fff; cursor: pointer; }
.payd-form .payd-pay:disabled { background: #4a5361; color: #fff; cursor: progress; }
.payd-form .payd-disabled { pointer-events: none; color: #4a5361; }
dialog.payd-3ds { width: min(32rem, 94vw); height: min(40rem, 90vh); padding: .5rem; border: 0; border-radius: 12px; display: flex; flex-direction: column; font-family: system-ui, sans-serif; }
dialog.payd-3ds:not([open]) { display: none; }
dialog.payd-3ds::backdrop { background: rgb(0 0 0 / 55%); }
dialog.payd-3ds .payd-3ds-title { margin: .3rem .4rem .6rem; font-weight: 600; color: #1b1f24; }
dialog.payd-3ds .payd-3ds-frame { flex: 1; width: 100%; border: 0; }
`;

/** The card frame's page (/checkout/card-frame): the fields, edge to edge, room for focus outlines. */
export const CARD_FRAME_CSS = `${FIELDS_CSS}
html, body { margin: 0; background: transparent; }
body { padding: 5px; }
.payd-card > .payd-field:last-child { margin-bottom: 0; }
`;

/** payd's own pages (hosted page, link page, 3-D Secure page, outcomes). */
export const CHECKOUT_CSS = `
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
body { margin: 0; background: #f5f6f8; color: #1b1f24; }
main { max-width: 28rem; margin: 0 auto; padding: 1.5rem 1rem; }
h1 { font-size: 1.4rem; margin: 0 0 1rem; }
.card-box { background: #fff; border-radius: 12px; padding: 1.25rem; box-shadow: 0 1px 3px rgb(0 0 0 / 12%); }
button { font-size: 1.05rem; padding: .8rem 1rem; width: 100%; border: 0; border-radius: 8px; background: #1a5fd6; color: #fff; cursor: pointer; }
button.secondary { background: #e4e7ec; color: #1b1f24; margin-top: .6rem; }
button:focus-visible, a:focus-visible { outline: 3px solid #1a5fd6; outline-offset: 2px; }
.muted { color: #4a5361; font-size: .9rem; }
form.inline { display: inline; }
button.link { background: none; border: 0; padding: 0; width: auto; font: inherit; color: inherit; text-decoration: underline; cursor: pointer; }
textarea, select { font: inherit; padding: .5rem; border: 1px solid #8a94a3; border-radius: 8px; }
.payd-receipt { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; margin: 0 0 .5rem; }
.payd-receipt dt { color: #4a5361; } .payd-receipt dd { margin: 0; overflow-wrap: anywhere; }
h2 { font-size: 1.1rem; margin: 0 0 .6rem; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .3rem; border-bottom: 1px solid #d5d9e0; vertical-align: top; }
td { overflow-wrap: anywhere; }
.table-scroll { max-width: 100%; overflow-x: auto; }
.table-scroll table { min-width: 40rem; }
main:has(.table-scroll) { max-width: 72rem; }
nav { overflow-wrap: anywhere; }
.payd-lang ul { list-style: none; display: flex; flex-wrap: wrap; justify-content: flex-end; gap: .25rem .5rem; margin: 0 0 .5rem; padding: 0; }
.payd-lang a { display: inline-block; padding: .3rem .5rem; min-height: 24px; color: #1b1f24; border-radius: 6px; }
.payd-lang a[aria-current="true"] { font-weight: 600; text-decoration: none; background: #e4e7ec; }
${WIDGET_CSS}`;

const cspWith = (formOrigins: string[] | 'any') =>
  formOrigins === 'any' ? PAGE_CSP.replace("form-action 'self'; ", '')
    : formOrigins.length ? PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${[...new Set(formOrigins)].join(' ')}`)
      : PAGE_CSP;

/**
 * formOrigins: origins a form of the page may end on after redirects (CSP form-action
 * covers the redirects of a form submission), e.g. an OAuth client's redirect URI; 'any'
 * leaves form-action out, for a page whose form ends on redirects payd cannot list.
 */
export interface PageFraming {
  /** Who may frame the page (CSP frame-ancestors); default 'none' (with X-Frame-Options DENY). */
  frameAncestors?: string;
  /** What the page may frame (CSP frame-src); default nothing (default-src 'none'). */
  frameSrc?: string;
  /** A shopper page's language switch (HTML, src/checkout/language.ts), above the heading. */
  languageSwitch?: string;
  /** The message key of the title, for a page whose script may say it again in another language (the hosted page). */
  titleKey?: string;
}

export function sendPage(reply: FastifyReply, status: number, title: string, body: string, scripts: string[] = [], refreshTo?: string, formOrigins: string[] | 'any' = [], lang = 'en', framing: PageFraming = {}): FastifyReply {
  const html = `<!doctype html>
<html lang="${escapeHtml(lang)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${refreshTo ? `<meta http-equiv="refresh" content="0;url=${escapeHtml(refreshTo)}">` : ''}
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/checkout/checkout.css">
</head>
<body>
<main>
${framing.languageSwitch ?? ''}
<h1${framing.titleKey ? ` data-payd-t="${escapeHtml(framing.titleKey)}"` : ''}>${escapeHtml(title)}</h1>
${body}
</main>
${scripts.join('\n')}
</body>
</html>`;
  let csp = cspWith(formOrigins);
  if (framing.frameAncestors) csp = csp.replace("frame-ancestors 'none'", `frame-ancestors ${framing.frameAncestors}`);
  if (framing.frameSrc) csp += `; frame-src ${framing.frameSrc}`;
  reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', csp)
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer');
  if (!framing.frameAncestors) reply.header('x-frame-options', 'DENY');
  return reply.send(html);
}

/** A shopper page's language (src/checkout/language.ts pageLanguage). */
export interface ShopperPageLanguage {
  locale: string;
  switchHtml: string;
}

/**
 * The hosted page: the widget takes the session credential from the page address's
 * fragment (#session=...), never sent to any server. The server cannot know the session,
 * so the page is in the shopper's choice or the browser's language; the widget says its
 * heading and intro again (data-payd-t) in the session's language once it has read it.
 */
export function fragmentCheckoutPage(reply: FastifyReply, title: string, intro: string, lang: ShopperPageLanguage): FastifyReply {
  const body = `<p class="muted" data-payd-t="securePaymentIntro">${escapeHtml(intro)}</p>
<div class="card-box" id="payd-checkout"></div>`;
  const script = '<script src="/checkout/widget.js" data-payd-session-from="fragment" data-payd-mount="#payd-checkout"></script>';
  return sendPage(reply, 200, title, body, [script], undefined, [], lang.locale, { frameSrc: "'self'", languageSwitch: lang.switchHtml, titleKey: 'securePayment' });
}

/** A page that mounts the widget for a session credential written in the page (payment link page). */
export function checkoutPage(reply: FastifyReply, title: string, intro: string, widgetData: string, lang: ShopperPageLanguage): FastifyReply {
  const body = `<p class="muted">${escapeHtml(intro)}</p>
<div class="card-box" id="payd-checkout"></div>`;
  const script = `<script src="/checkout/widget.js" data-payd-session="${escapeHtml(widgetData)}" data-payd-mount="#payd-checkout"></script>`;
  return sendPage(reply, 200, title, body, [script], undefined, [], lang.locale, { frameSrc: "'self'", languageSwitch: lang.switchHtml });
}

/**
 * Who may embed payd's card frame and 3-D Secure pages: any page by default, as Stripe
 * Elements (the frame sends nothing to its parent but events and outcomes); when the
 * merchant registered its checkout origins (the entity's checkout_origins), only those and
 * payd's own pages (the hosted page frames the card frame too).
 */
export const cardFrameAncestors = (origins: readonly string[]): string => (origins.length ? `'self' ${origins.join(' ')}` : '*');
/**
 * The card frame (/checkout/card-frame?s={session id}): the same for every session of a
 * merchant but for who may embed it (the parent's origin and the credential come by the
 * fragment and postMessage), so cacheable.
 */
export function cardFramePage(reply: FastifyReply, frameAncestors: string): FastifyReply {
  const csp = PAGE_CSP.replace("form-action 'self'", "form-action 'none'").replace("frame-ancestors 'none'", `frame-ancestors ${frameAncestors}`);
  return reply
    .code(200)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', csp)
    .header('cache-control', 'public, max-age=300')
    .header('referrer-policy', 'no-referrer')
    .send(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Card details</title>
<link rel="stylesheet" href="/checkout/card-frame.css">
<script src="/checkout/card-frame.js" defer></script>
</head>
<body></body>
</html>`);
}
